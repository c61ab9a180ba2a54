import { randomBytes } from 'node:crypto';
import { isPseudonym, type Pseudonymize } from '../../core/pseudonyms.js';
import type { OutboxDispatcher, StoredEvent } from '../../core/events.js';
import { decodeJson, nowIso } from '../../store/database.js';

export const newMessageId = () => `msg_${randomBytes(12).toString('base64url')}`;

/** The body every delivery sends: `{type, timestamp, data}`, fixed when the delivery is made, so a retry sends the same bytes. */
export function messageBody(type: string, timestamp: string, data: unknown): string {
  return JSON.stringify({ type, timestamp, data });
}

/**
 * The outbox dispatcher: in the transaction that marks events dispatched, one delivery row per
 * event and subscribed endpoint of its project (events without a project, such as organization-wide
 * API keys, go to every endpoint of the organization). Paused endpoints get rows too; disabled ones do not.
 */
export const fanOut =
  (pseudonymize: Pseudonymize): OutboxDispatcher =>
  async (trx, events, payloadsOf) => {
    const organizations = [...new Set(events.map((e) => e.organizationId))];
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'organization_id', 'project_id', 'events'])
      .where('organization_id', 'in', organizations)
      .where('status', '!=', 'disabled')
      .execute();
    if (endpoints.length === 0) return;
    const subscribed = endpoints.map((e) => ({ ...e, events: new Set(decodeJson<string[]>(e.events)) }));
    const targeted = events.flatMap((event: StoredEvent) => {
      const targets = subscribed.filter(
        (e) =>
          e.organization_id === event.organizationId &&
          e.events.has(event.type) &&
          (event.projectId === null || e.project_id === event.projectId),
      );
      return targets.length > 0 ? [{ event, targets }] : [];
    });
    const payloads = await payloadsOf(targeted.map(({ event }) => event));
    const now = nowIso();
    const rows = targeted.flatMap(({ event, targets }, i) => {
      const payload = payloads[i]!;
      const messageId = newMessageId();
      const body = messageBody(event.type, event.createdAt, payload);
      const named = payload as { memory?: { id?: number; end_user_id?: string }; end_user_id?: string };
      const memory = named.memory?.id ?? null;
      const endUser = named.end_user_id ?? named.memory?.end_user_id;
      // An event of a purge names the end user by pseudonym already.
      const endUserKey =
        endUser === undefined || event.projectId === null
          ? null
          : isPseudonym(endUser)
            ? endUser
            : pseudonymize(event.projectId, endUser);
      return targets.map((e) => ({
        endpoint_id: e.id,
        message_id: messageId,
        event_type: event.type,
        memory_id: memory,
        end_user_key: endUserKey,
        body,
        status: 'pending',
        next_attempt_at: now,
        lease_until: null,
        created_at: now,
        updated_at: now,
      }));
    });
    for (let i = 0; i < rows.length; i += 500)
      await trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 500))
        .execute();
  };
