import { encodeJson, type Executor } from '../../store/database.js';

/** The durable event outbox. Events are written with the change they describe; delivery reads them later. */

export interface OutboxEvent {
  organizationId: string;
  projectId: string | null;
  type: string;
  payload: Record<string, unknown>;
  createdAt: string;
}

export async function enqueueEvents(trx: Executor, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  await trx
    .insertInto('outbox_events')
    .values(
      events.map((e) => ({
        organization_id: e.organizationId,
        project_id: e.projectId,
        type: e.type,
        payload: encodeJson(e.payload),
        created_at: e.createdAt,
      })),
    )
    .execute();
}
