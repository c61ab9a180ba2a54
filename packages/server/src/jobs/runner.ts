import type { BaseLogger } from 'pino';
import { sql } from 'kysely';
import { containsText, decodeJson, encodeJson, nowIso, type Database, type Executor } from '../store/database.js';
import { renamedJson } from '../core/pseudonyms.js';
import { deleteInBatches } from '../core/batches.js';
import { everyProcessLeads, FOLLOWER_POLL_MS, type Leadership } from '../store/leadership.js';

/**
 * Durable background jobs: rows in `jobs`, leased by whichever process polls first
 * (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite has a single writer), retried after a crash
 * once the lease runs out. This module owns the jobs table.
 */

export interface JobView {
  id: number;
  kind: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  progress: number;
  result: unknown;
  error: string | null;
  created_at: string;
  updated_at: string;
  /** What the job was asked to do, for the owner's access check; not part of the wire representation. */
  payload: Record<string, unknown>;
}

export interface JobContext {
  id: number;
  projectId: string | null;
  payload: Record<string, unknown>;
  /** 1 on the first run; a crash or failure runs the job again with the next number. */
  attempt: number;
  /** Whether a failure now is final (no further attempt follows). */
  finalAttempt: boolean;
  /**
   * Records progress and extends the lease, so a long job that reports progress is not taken over.
   * Throws LeaseLost when another runner has taken the job over (this one stalled past its lease).
   * Given the transaction of the job's own writes, it fences them: they commit only while this
   * attempt holds the job (on PostgreSQL the job's row stays locked until they do).
   */
  progress(fraction: number, trx?: Executor): Promise<void>;
}

export type JobHandler = (job: JobContext) => Promise<unknown>;

/** A failure that another attempt cannot fix (a corrupt file): the job fails at once instead of being retried. */
export class PermanentJobError extends Error {}

/** This attempt's lease ran out and another runner took the job over: this attempt stops, writing nothing further. */
export class LeaseLost extends Error {
  constructor(jobId: number) {
    super(`Job ${jobId} was taken over by another runner`);
  }
}

const LEASE_MS = 60_000;
const MAX_ATTEMPTS = 3;
const MAX_BACKOFF_MS = 30_000;

export async function enqueueJob(
  db: Executor,
  job: { kind: string; projectId: string | null; payload: Record<string, unknown> },
): Promise<number> {
  const now = nowIso();
  const row = await db
    .insertInto('jobs')
    .values({
      kind: job.kind,
      project_id: job.projectId,
      payload: encodeJson(job.payload),
      status: 'queued',
      progress: 0,
      attempts: 0,
      run_after: now,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function getJob(db: Executor, id: number, projectId: string, kind?: string): Promise<JobView | undefined> {
  const row = await db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .$if(kind !== undefined, (qb) => qb.where('kind', '=', kind!))
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    kind: row.kind,
    status: row.status as JobView['status'],
    progress: row.progress,
    result: row.result === null ? null : decodeJson(row.result),
    error: row.error,
    created_at: row.created_at,
    updated_at: row.updated_at,
    payload: decodeJson(row.payload),
  };
}

/**
 * Job kinds and their handlers, registered explicitly by the composition root (services.ts).
 * Code that enqueues a job calls `enqueued()` after its commit so a runner in this process starts
 * at once instead of at its next poll.
 */
export class JobHandlers {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly listeners = new Set<() => void>();

  register(kind: string, handler: JobHandler): void {
    if (this.handlers.has(kind)) throw new Error(`Job kind ${kind} is registered twice`);
    this.handlers.set(kind, handler);
  }

  get(kind: string): JobHandler | undefined {
    return this.handlers.get(kind);
  }

  kinds(): string[] {
    return [...this.handlers.keys()];
  }

  enqueued(): void {
    for (const listener of this.listeners) listener();
  }

  /** Called on every `enqueued()`; returns the function that stops listening. */
  onEnqueued(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/** Leases and runs queued jobs of the registered kinds until stopped; any number of runners may share a database. */
export class JobRunner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private unlisten: (() => void) | undefined;
  /** Polls in a row that failed (the database unreachable): each doubles the wait before the next. */
  private failures = 0;

  constructor(
    private readonly database: Database,
    private readonly handlers: JobHandlers,
    private readonly log: Log,
    private readonly pollMs = 1000,
    /** Whether this process leads the fleet (store/leadership.ts): the others poll every FOLLOWER_POLL_MS, not pollMs. */
    private readonly leadership: Leadership = everyProcessLeads,
  ) {}

  start(): void {
    this.stopped = false;
    const stopEnqueued = this.handlers.onEnqueued(() => this.kick());
    // Come to lead (the last leader died): the jobs it left queued are looked for now.
    const stopLead = this.leadership.onLead(() => this.kick());
    this.unlisten = () => {
      stopEnqueued();
      stopLead();
    };
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unlisten?.();
    clearTimeout(this.timer);
    await this.running;
  }

  /** Looks for work now (after an enqueue in this process) instead of at the next poll. */
  kick(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  private schedule(delay: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.drain()
        .then(() => {
          this.failures = 0;
          return this.leadership.leads() ? this.pollMs : Math.max(this.pollMs, FOLLOWER_POLL_MS);
        })
        // The database unreachable, locked or failing: logged, and the next poll backs off (doubling up to MAX_BACKOFF_MS).
        .catch((error: unknown) => {
          this.failures++;
          const wait = Math.min(MAX_BACKOFF_MS, this.pollMs * 2 ** Math.min(this.failures - 1, 10));
          this.log.warn(
            { err: error instanceof Error ? error.message : String(error), failures: this.failures, retry_in_ms: wait },
            'job runner: database error; backing off',
          );
          return wait;
        })
        .then((wait) => {
          this.running = undefined;
          if (!this.stopped) this.schedule(wait);
        });
    }, delay);
    this.timer.unref();
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const job = await this.lease();
      if (!job) return;
      await this.run(job);
    }
  }

  private async lease() {
    const now = new Date();
    const kinds = this.handlers.kinds();
    if (kinds.length === 0) return undefined;
    const lockedUntil = new Date(now.getTime() + LEASE_MS).toISOString();
    const skipLocked = this.database.dialect === 'postgres' ? sql`FOR UPDATE SKIP LOCKED` : sql``;
    const result = await sql<{
      id: number;
      kind: string;
      project_id: string | null;
      payload: unknown;
      attempts: number;
    }>`
      UPDATE jobs SET status = 'running', locked_until = ${lockedUntil}, attempts = attempts + 1, updated_at = ${now.toISOString()}
      WHERE id = (
        SELECT id FROM jobs
        WHERE kind IN (${sql.join(kinds)}) AND run_after <= ${now.toISOString()}
          AND (status = 'queued' OR (status = 'running' AND locked_until < ${now.toISOString()}))
        ORDER BY id LIMIT 1 ${skipLocked}
      )
      RETURNING id, kind, project_id, payload, attempts`.execute(this.database.db);
    return result.rows[0];
  }

  private async run(job: {
    id: number;
    kind: string;
    project_id: string | null;
    payload: unknown;
    attempts: number;
  }): Promise<void> {
    // Every write of an attempt is fenced by its number: after a takeover, only the new attempt's land.
    const ours = (trx: Executor) =>
      trx.updateTable('jobs').where('id', '=', job.id).where('attempts', '=', job.attempts);
    const finish = async (set: {
      status: string;
      result?: string | null;
      error?: string | null;
      progress?: number;
      run_after?: string;
    }) => {
      const result = await ours(this.database.db)
        .set({ ...set, locked_until: null, updated_at: nowIso() })
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0)
        this.log.warn({ job: job.id, kind: job.kind }, 'job taken over by another runner; its outcome is theirs');
    };
    try {
      const result = await this.handlers.get(job.kind)!({
        id: job.id,
        projectId: job.project_id,
        payload: decodeJson<Record<string, unknown>>(job.payload),
        attempt: job.attempts,
        finalAttempt: job.attempts >= MAX_ATTEMPTS,
        progress: async (fraction, trx = this.database.db) => {
          const now = Date.now();
          const renewed = await ours(trx)
            .set({
              progress: Math.min(1, Math.max(0, fraction)),
              locked_until: new Date(now + LEASE_MS).toISOString(),
              updated_at: new Date(now).toISOString(),
            })
            .executeTakeFirst();
          if (Number(renewed.numUpdatedRows) === 0) throw new LeaseLost(job.id);
        },
      });
      await finish({ status: 'succeeded', progress: 1, result: encodeJson(result ?? null), error: null });
    } catch (error) {
      if (error instanceof LeaseLost) {
        this.log.warn({ job: job.id, kind: job.kind }, 'job taken over by another runner; this attempt stopped');
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn({ job: job.id, kind: job.kind, err: message }, 'job failed');
      await finish(
        job.attempts >= MAX_ATTEMPTS || error instanceof PermanentJobError
          ? { status: 'failed', error: message }
          : {
              status: 'queued',
              error: message,
              run_after: new Date(Date.now() + 2 ** job.attempts * 1000).toISOString(),
            },
      );
    }
  }
}

/**
 * Retention: deletes jobs that finished (succeeded or failed) before `before`, a batch a statement;
 * answers how many. Their readers (an upload's or a refresh's progress, an ontology's
 * reclassification) answer 404 or null for a job that is gone.
 */
export async function purgeFinishedJobs(db: Executor, before: string, batch = 1_000): Promise<number> {
  return deleteInBatches(batch, async () => {
    const finished = db
      .selectFrom('jobs')
      .select('id')
      .where('status', 'in', ['succeeded', 'failed'])
      .where('updated_at', '<', before)
      .limit(batch);
    return Number((await db.deleteFrom('jobs').where('id', 'in', finished).executeTakeFirst()).numDeletedRows);
  });
}

/** Erasure: deletes the jobs `ids` (their payload and result may quote what is being erased, a file name say). */
export async function eraseJobs(db: Executor, ids: number[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 500)
    await db
      .deleteFrom('jobs')
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
}

/**
 * Removing an end user: jobs of the project whose payload or result names them (a refresh of their vectors, say)
 * name their pseudonym instead (core/pseudonyms.ts). Found by the id's JSON text: a purge is rare, and finished
 * jobs are kept only for their retention.
 */
export async function renameEndUserInJobs(
  db: Executor,
  projectId: string,
  endUserId: string,
  pseudonym: string,
): Promise<void> {
  const needle = JSON.stringify(endUserId);
  const rows = await db
    .selectFrom('jobs')
    .select(['id', 'payload', 'result'])
    .where('project_id', '=', projectId)
    .where((eb) => eb.or([containsText(db, 'payload', needle), containsText(db, 'result', needle)]))
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const payload = renamedJson(row.payload, endUserId, pseudonym);
    const result = renamedJson(row.result, endUserId, pseudonym);
    if (payload !== undefined || result !== undefined)
      await db
        .updateTable('jobs')
        .set({ ...(payload !== undefined ? { payload } : {}), ...(result !== undefined ? { result } : {}) })
        .where('id', '=', row.id)
        .execute();
  }
}

/** Jobs by status (queued, running, succeeded, failed), for `engram status` and /metrics. */
export async function jobCounts(db: Executor): Promise<Record<JobView['status'], number>> {
  const rows = await db
    .selectFrom('jobs')
    .select(['status', (eb) => eb.fn.countAll().as('n')])
    .groupBy('status')
    .execute();
  const counts = { queued: 0, running: 0, succeeded: 0, failed: 0 };
  for (const row of rows) if (row.status in counts) counts[row.status as JobView['status']] = Number(row.n);
  return counts;
}
