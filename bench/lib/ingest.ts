import type { Conversation } from './locomo.js';

/** POSTs a JSON body and answers the parsed response, throwing on anything but 200/201. */
export type Post = (path: string, body: unknown) => Promise<Record<string, unknown>>;

/**
 * Stores a LoCoMo conversation's turns in order through `POST /v1/memory/add_turn` (one tenant user
 * per conversation, with speaker, session and the session's date). Answers the stored id -> dia_id
 * map, each request's latency and how many turns were answered as duplicates.
 */
export async function ingestConversation(post: Post, conv: Conversation, tenantId: string, userId: string) {
  const diaOf = new Map<number, string>();
  const latencies: number[] = [];
  let duplicates = 0;
  for (const d of conv.docs) {
    const s = performance.now();
    const res = await post('/v1/memory/add_turn', {
      tenant_id: tenantId,
      user_id: userId,
      source: 'locomo',
      text: d.text,
      speaker: d.speaker,
      metadata: { session_id: d.sessionId, timestamp: new Date(d.createdAt).toISOString() },
    });
    latencies.push(performance.now() - s);
    if (res.status === 'duplicate') duplicates++;
    diaOf.set(res.id as number, conv.diaOf.get(d.id)!);
  }
  return { diaOf, latencies, duplicates };
}
