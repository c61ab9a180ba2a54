import type { BaseLogger } from 'pino';

/** Periodic upkeep (purges, retention): each chore on its own timer, never overlapping itself. */
export interface Chore {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
  /**
   * Work on this process's own state, run in every process; otherwise the chore goes through the shared
   * database and runs only in the process leading the fleet (store/leadership.ts).
   */
  perProcess?: true;
}

/**
 * A chore's first run comes after its interval or this, whichever is shorter: an hourly retention
 * still runs in a process that lives less than an hour (restarted by deploys or autoscaling).
 */
export const FIRST_RUN_WITHIN_MS = 5 * 60_000;

export class Schedule {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly chores: readonly Chore[],
    private readonly log: Pick<BaseLogger, 'warn'>,
    /** Whether this process leads the fleet (store/leadership.ts): the database-wide chores run only then. */
    private readonly leads: () => boolean = () => true,
  ) {}

  start(): void {
    for (const chore of this.chores) {
      const first = setTimeout(
        () => {
          this.runOnce(chore);
          this.keep(setInterval(() => this.runOnce(chore), chore.everyMs));
        },
        Math.min(chore.everyMs, FIRST_RUN_WITHIN_MS),
      );
      this.keep(first);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // clearTimeout and clearInterval clear either kind of Node timer.
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.all(this.running.values());
  }

  private keep(timer: NodeJS.Timeout): void {
    timer.unref();
    if (this.stopped) clearInterval(timer);
    else this.timers.push(timer);
  }

  private runOnce(chore: Chore): void {
    if (this.running.has(chore.name) || !(chore.perProcess || this.leads())) return;
    const run = chore
      .run()
      .then(() => undefined)
      .catch((error: unknown) =>
        this.log.warn(
          { chore: chore.name, err: error instanceof Error ? error.message : String(error) },
          'chore failed',
        ),
      )
      .finally(() => this.running.delete(chore.name));
    this.running.set(chore.name, run);
  }
}
