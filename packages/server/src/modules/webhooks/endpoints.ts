import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Selectable } from 'kysely';
import { decrypt, deriveKey, encrypt } from '../../core/crypto.js';
import { invalid, notFound } from '../../core/errors.js';
import { subscribe } from '../../core/event-subscriptions.js';
import { isEventKind } from '../../core/events.js';
import { checkAddress, OutboundRefused, type OutboundPolicy } from '../../core/outbound.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { decodeJson, encodeJson, type Database, type Executor } from '../../store/database.js';
import type { WebhookEndpointsTable } from '../../store/schema.js';
import { notifyDeliveriesDue } from './due.js';
import {
  DEFAULT_DISABLE_AFTER_SECONDS,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  DEFAULT_SCHEDULE_SECONDS,
  type EndpointPatch,
  type NewEndpoint,
  type RetryConfig,
  type SignatureConfig,
} from './schemas.js';

/** Where a webhook endpoint lives: the caller's organization and active project. */
export interface EndpointScope {
  organizationId: string;
  projectId: string;
}

/** What the webhooks module needs of the service: the master secret (to seal signing secrets) and the receiver policy. */
export interface WebhookSettings {
  secretKey: Uint8Array;
  allowHosts: string[];
  allowHttp: boolean;
  timeoutMs: number;
}

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type EndpointState = 'enabled' | 'paused' | 'disabled';

export const policyOf = (settings: WebhookSettings): OutboundPolicy => ({ allow: settings.allowHosts });
const sealKey = (settings: WebhookSettings) => deriveKey(settings.secretKey, 'webhook-secret');

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function openSecret(settings: WebhookSettings, sealed: string): string {
  return decrypt(sealKey(settings), sealed);
}

/**
 * The receiver URL check of create and update (delivery checks again, connecting to the checked
 * address): https unless plain http is allowed, no credentials, and every address the host
 * resolves to public or allow-listed. Any failure is a 400 naming `url`.
 */
export async function checkReceiverUrl(settings: WebhookSettings, raw: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('url', 'url must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && settings.allowHttp)) {
    throw invalid('url', settings.allowHttp ? 'url must be http or https' : 'url must be https');
  }
  if (url.username || url.password) throw invalid('url', 'url must not carry credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  try {
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    if (addresses.length === 0) throw new OutboundRefused(`${host} does not resolve`);
    for (const address of addresses) checkAddress(policyOf(settings), host, address);
  } catch (error) {
    if (error instanceof OutboundRefused) throw invalid('url', `url is not allowed: ${error.message}`);
    throw invalid('url', `url host ${host} does not resolve`);
  }
  return url.toString();
}

function checkEvents(events: string[]): void {
  events.forEach((kind, i) => {
    if (!isEventKind(kind))
      throw invalid(`events/${i}`, `${kind} is not an event kind; see GET /org/webhooks/event-types`);
  });
}

const retryConfigOf = (row: Pick<EndpointRow, 'retry_config'>) => decodeJson<RetryConfig>(row.retry_config);
const signatureConfigOf = (row: Pick<EndpointRow, 'signature_config'>) =>
  decodeJson<SignatureConfig>(row.signature_config);
export { retryConfigOf };

export function toEndpoint(row: EndpointRow) {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    description: row.description,
    events: decodeJson<string[]>(row.events),
    enabled: row.status === 'enabled',
    state: row.status as EndpointState,
    disabled_reason: row.disabled_reason,
    project_id: row.project_id,
    retry_config: retryConfigOf(row),
    signature_config: signatureConfigOf(row),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
export type EndpointView = ReturnType<typeof toEndpoint>;

/**
 * An endpoint receives its kinds of event in its project while it is not disabled (paused, its
 * deliveries wait): the subscription the outbox writes events for (core/event-subscriptions.ts#subscribe), set in
 * every transaction that changes the endpoint's events or status.
 */
export async function subscribeEndpoint(
  trx: Executor,
  id: number,
  endpoint: Pick<EndpointRow, 'organization_id' | 'project_id' | 'events' | 'status'> | null,
) {
  const live = endpoint?.status === 'disabled' ? null : endpoint;
  await subscribe(
    trx,
    `webhook_endpoint:${id}`,
    live && {
      organizationId: live.organization_id,
      projectId: live.project_id,
      types: decodeJson<string[]>(live.events),
    },
  );
}

const inScope = (db: Executor, scope: EndpointScope) =>
  db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('organization_id', '=', scope.organizationId)
    .where('project_id', '=', scope.projectId);

/**
 * The endpoint if it is in scope; anything else is 404. `forUpdate` (PostgreSQL) locks its row until the transaction
 * ends, for a change computed from what the row holds: a concurrent change would otherwise be overwritten with it.
 */
export async function endpointRow(
  db: Executor,
  scope: EndpointScope,
  id: number,
  forUpdate = false,
): Promise<EndpointRow> {
  const row = await inScope(db, scope)
    .where('id', '=', id)
    .$if(forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!row) throw notFound('Webhook endpoint');
  return row;
}

export async function listEndpoints(db: Executor, scope: EndpointScope, page: PageParams) {
  return paginate(inScope(db, scope).orderBy('id'), page, toEndpoint);
}

export async function createEndpoint(
  database: Database,
  settings: WebhookSettings,
  ctx: WriteContext,
  scope: EndpointScope,
  input: NewEndpoint,
) {
  checkEvents(input.events);
  const url = await checkReceiverUrl(settings, input.url);
  const secret = newSecret();
  const row = await write(database, ctx, async (trx, effects) => {
    const created = await trx
      .insertInto('webhook_endpoints')
      .values({
        organization_id: scope.organizationId,
        project_id: scope.projectId,
        name: input.name,
        url,
        description: input.description ?? '',
        events: encodeJson(input.events),
        retry_config: encodeJson({
          schedule_seconds: input.retry_config?.schedule_seconds ?? DEFAULT_SCHEDULE_SECONDS,
          disable_after_seconds: input.retry_config?.disable_after_seconds ?? DEFAULT_DISABLE_AFTER_SECONDS,
        }),
        signature_config: encodeJson({
          rotation_overlap_seconds:
            input.signature_config?.rotation_overlap_seconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS,
        }),
        status: 'enabled',
        disabled_reason: null,
        secret: encrypt(sealKey(settings), secret),
        previous_secret: null,
        previous_secret_until: null,
        failing_since: null,
        last_success_at: null,
        last_failure_at: null,
        created_at: effects.now,
        updated_at: effects.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await subscribeEndpoint(trx, created.id, created);
    effects.audit('webhook.create', { type: 'webhook_endpoint', id: created.id });
    return created;
  });
  return { ...toEndpoint(row), secret };
}

/** The spec's update: name, url (checked again), description, events, retry_config, signature_config; never the secret. */
export async function updateEndpoint(
  database: Database,
  settings: WebhookSettings,
  ctx: WriteContext,
  scope: EndpointScope,
  id: number,
  patch: EndpointPatch,
) {
  if (patch.events) checkEvents(patch.events);
  const url = patch.url === undefined ? undefined : await checkReceiverUrl(settings, patch.url);
  return write(database, ctx, async (trx, effects) => {
    // Locked: the configs below are merged into what the row holds.
    const row = await endpointRow(trx, scope, id, database.dialect === 'postgres');
    const updated = await trx
      .updateTable('webhook_endpoints')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(url !== undefined ? { url } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.events !== undefined ? { events: encodeJson(patch.events) } : {}),
        ...(patch.retry_config !== undefined
          ? { retry_config: encodeJson({ ...retryConfigOf(row), ...patch.retry_config }) }
          : {}),
        ...(patch.signature_config !== undefined
          ? { signature_config: encodeJson({ ...signatureConfigOf(row), ...patch.signature_config }) }
          : {}),
        updated_at: effects.now,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (patch.events !== undefined) await subscribeEndpoint(trx, id, updated);
    effects.audit('webhook.update', { type: 'webhook_endpoint', id });
    return toEndpoint(updated);
  });
}

export async function deleteEndpoint(database: Database, ctx: WriteContext, scope: EndpointScope, id: number) {
  return write(database, ctx, async (trx, effects) => {
    const row = await endpointRow(trx, scope, id);
    // Lock order (PostgreSQL): its deliveries in id order, then the endpoint, as recording attempts (delivery.ts) and the
    // erase hook take them. Deleted in scan order, one delivery could be held here while a batch of attempts holds
    // another and then waits for this one: a deadlock.
    await trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', id)
      .orderBy('id')
      .$if(database.dialect === 'postgres', (qb) => qb.forUpdate())
      .execute();
    // Attempts and deliveries go with it (they reference it ON DELETE CASCADE; deleted explicitly for SQLite without foreign keys).
    await trx.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
    await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
    await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    await subscribeEndpoint(trx, id, null);
    effects.audit('webhook.delete', { type: 'webhook_endpoint', id });
    return toEndpoint(row);
  });
}

/** pause: deliveries accumulate; resume: enabled again (also after an automatic disable), with a clean failure streak. */
export async function setEndpointState(
  database: Database,
  ctx: WriteContext,
  scope: EndpointScope,
  id: number,
  state: 'paused' | 'enabled',
) {
  const view = await write(database, ctx, async (trx, effects) => {
    await endpointRow(trx, scope, id);
    const updated = await trx
      .updateTable('webhook_endpoints')
      .set({
        status: state,
        disabled_reason: null,
        updated_at: effects.now,
        ...(state === 'enabled' ? { failing_since: null, consecutive_failures: 0 } : {}),
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await subscribeEndpoint(trx, id, updated);
    effects.audit(state === 'paused' ? 'webhook.pause' : 'webhook.resume', { type: 'webhook_endpoint', id });
    return toEndpoint(updated);
  });
  if (state === 'enabled') notifyDeliveriesDue();
  return view;
}

/** A new secret; the old one keeps signing beside it for the endpoint's rotation overlap. */
export async function rotateSecret(
  database: Database,
  settings: WebhookSettings,
  ctx: WriteContext,
  scope: EndpointScope,
  id: number,
) {
  const secret = newSecret();
  return write(database, ctx, async (trx, effects) => {
    // Locked: the secret it holds becomes the previous one, so a rotation under way is waited for, not lost.
    const row = await endpointRow(trx, scope, id, database.dialect === 'postgres');
    const until = new Date(
      Date.parse(effects.now) + signatureConfigOf(row).rotation_overlap_seconds * 1000,
    ).toISOString();
    await trx
      .updateTable('webhook_endpoints')
      .set({
        secret: encrypt(sealKey(settings), secret),
        previous_secret: row.secret,
        previous_secret_until: until,
        updated_at: effects.now,
      })
      .where('id', '=', id)
      .execute();
    effects.audit('webhook.rotate_secret', { type: 'webhook_endpoint', id });
    return { secret, previous_secret_expires_at: until };
  });
}
