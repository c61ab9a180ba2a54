const listeners = new Set<() => void>();

/**
 * In-process wake-up for delivery loops: deliveries were made due (retried, replayed, a test event, an
 * endpoint resumed). A loop looks for deliveries to claim only then, after its own fan-out committed,
 * when one of its attempts ends or is recorded, and on its idle poll (work of other processes, retries
 * that came due).
 */
export function notifyDeliveriesDue(): void {
  for (const listener of listeners) listener();
}

export function onDeliveriesDue(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
