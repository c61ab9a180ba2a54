import { erasedMemory } from '../../core/events.js';
import { renamedJson } from '../../core/pseudonyms.js';
import type { Executor } from '../../store/database.js';
import { messageBody } from './fan-out.js';

/**
 * What receivers answered to `deliveries` (webhook_attempts.response_body, the first 2 KiB, which may echo
 * what was sent) is erased; the status, latency and error of each attempt stay.
 */
async function eraseReceiverAnswers(trx: Executor, deliveries: number[]): Promise<void> {
  for (let i = 0; i < deliveries.length; i += 500) {
    await trx
      .updateTable('webhook_attempts')
      .set({ response_body: null })
      .where('delivery_id', 'in', deliveries.slice(i, i + 500))
      .where('response_body', 'is not', null)
      .execute();
  }
}

/** Forgetting: stored deliveries of a forgotten memory keep its id and nothing else, and their receivers' answers are erased. */
export async function eraseMemoryDeliveries(
  trx: Executor,
  memoryIds: number[],
  rewrittenIds: number[] = [],
): Promise<void> {
  const all = [...memoryIds, ...rewrittenIds];
  if (all.length === 0) return;
  const rewritten = new Set(rewrittenIds);
  const rows = await trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'memory_id', 'body'])
    .where('memory_id', 'in', all)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const sent = JSON.parse(row.body) as { type: string; timestamp: string };
    await trx
      .updateTable('webhook_deliveries')
      .set({ body: messageBody(sent.type, sent.timestamp, { memory: erasedMemory(row.memory_id!, rewritten) }) })
      .where('id', '=', row.id)
      .execute();
  }
  await eraseReceiverAnswers(
    trx,
    rows.map((r) => r.id),
  );
}

/**
 * Removing an end user: every delivery whose event named them (found by their pseudonym, `end_user_key`) names the
 * pseudonym instead, still to be sent or kept for its retention, and what receivers answered to it is erased.
 */
export async function eraseEndUserDeliveries(trx: Executor, endUserId: string, pseudonym: string): Promise<void> {
  const rows = await trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'body'])
    .where('end_user_key', '=', pseudonym)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const body = renamedJson(row.body, endUserId, pseudonym);
    if (body !== undefined)
      await trx.updateTable('webhook_deliveries').set({ body }).where('id', '=', row.id).execute();
  }
  await eraseReceiverAnswers(
    trx,
    rows.map((r) => r.id),
  );
}
