/**
 * Work for a remote provider, a queue per project (a provider call serves one project's items), the projects
 * served a batch each in turn: the memories waiting for a vector (retrieval/index-cache.ts) or for a chat
 * model's reading (intelligence/model-reading.ts). Each queue is read from its head: taking a batch from
 * the front of one array by splicing cost O(queue) per memory, 20 s of the search thread's time
 * for a 100,000-memory end user. The loop that drains it is its owner's.
 */
export class FairQueue<T extends { projectId: string; alone?: boolean }> {
  private readonly queues = new Map<string, { items: T[]; head: number }>();

  /** `wanted`: whether an item still waits with what it was queued with (a memory changed or forgotten meanwhile does not). */
  constructor(
    private readonly batchSize: number,
    private readonly wanted: (item: T) => boolean,
  ) {}

  get empty(): boolean {
    return this.queues.size === 0;
  }

  push(items: T[]): void {
    for (const item of items) {
      const queue = this.queues.get(item.projectId);
      if (queue) queue.items.push(item);
      else this.queues.set(item.projectId, { items: [item], head: 0 });
    }
  }

  /** The next batch of one project's items still wanted; an item marked `alone` is a batch by itself. */
  next(): { projectId: string; batch: T[] } | undefined {
    const first = this.queues.entries().next();
    if (first.done) return undefined;
    const [projectId, queue] = first.value;
    const batch: T[] = [];
    while (queue.head < queue.items.length && batch.length < this.batchSize) {
      const item = queue.items[queue.head]!;
      if (batch.length > 0 && (item.alone || batch[0]!.alone)) break;
      queue.head++;
      if (this.wanted(item)) batch.push(item);
    }
    // To the back of the line (the other projects' next batches first); what was taken is dropped once it is half the queue.
    this.queues.delete(projectId);
    if (queue.head === queue.items.length) return { projectId, batch };
    if (queue.head * 2 > queue.items.length) {
      queue.items = queue.items.slice(queue.head);
      queue.head = 0;
    }
    this.queues.set(projectId, queue);
    return { projectId, batch };
  }

  /** Drops every item not kept (by default: not wanted), so that what a forgotten memory queued goes now, not when reached. */
  prune(keep: (item: T) => boolean = this.wanted): void {
    for (const [projectId, queue] of this.queues) {
      queue.items = queue.items.slice(queue.head).filter(keep);
      queue.head = 0;
      if (queue.items.length === 0) this.queues.delete(projectId);
    }
  }

  clear(): void {
    this.queues.clear();
  }
}
