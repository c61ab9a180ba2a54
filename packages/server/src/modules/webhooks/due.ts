const listeners = new Set<() => void>();

/**
 * In-process wake-up for delivery loops: deliveries were made or made due (fanned out, retried,
 * replayed, an endpoint resumed). A loop looks for deliveries to claim only then, when one of its
 * attempts ends, and on its idle poll (work of other processes, retries that came due).
 */
export function notifyDeliveriesDue(): void {
  for (const listener of listeners) listener();
}

export function onDeliveriesDue(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
