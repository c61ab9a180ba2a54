import type { BaseLogger } from 'pino';

/** Periodic upkeep (purges, retention): each chore on its own timer, never overlapping itself. */
export interface Chore {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
}

export class Schedule {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly chores: readonly Chore[],
    private readonly log: Pick<BaseLogger, 'warn'>,
  ) {}

  start(): void {
    for (const chore of this.chores) {
      const timer = setInterval(() => this.runOnce(chore), chore.everyMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  async stop(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.all(this.running.values());
  }

  private runOnce(chore: Chore): void {
    if (this.running.has(chore.name)) return;
    const run = chore
      .run()
      .then(() => undefined)
      .catch((error: unknown) => this.log.warn({ chore: chore.name, err: error instanceof Error ? error.message : String(error) }, 'chore failed'))
      .finally(() => this.running.delete(chore.name));
    this.running.set(chore.name, run);
  }
}
