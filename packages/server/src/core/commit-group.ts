import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, Executor } from '../store/database.js';
import type { DB } from '../store/schema.js';

/** Where a write's transaction runs: its own on PostgreSQL, a place in the next group commit on SQLite (CommitGroup). */

/**
 * Bookkeeping around a request that is not a change of its own (an Idempotency-Key's claim and its
 * stored answer): on SQLite it takes a place in the next group commit, where each autocommit statement
 * was an fsync of its own that blocked the event loop, and a group of bookkeeping alone commits without
 * an fsync (CommitGroup); on PostgreSQL its statements run as they are, each its own commit.
 */
export function bookkeeping<T>(database: Database, work: (db: Executor) => Promise<T>): Promise<T> {
  return database.dialect === 'sqlite' ? inTransaction(database, work, false) : work(database.db);
}

/**
 * PostgreSQL: a transaction of its own. SQLite: a place in the next group commit; `durable` false for
 * bookkeeping, which needs no fsync of its own (CommitGroup).
 */
export function inTransaction<T>(
  database: Database,
  work: (trx: Transaction<DB>) => Promise<T>,
  durable = true,
): Promise<T> {
  if (database.dialect === 'postgres') return database.db.transaction().execute(work);
  let group = commitGroups.get(database);
  if (!group) commitGroups.set(database, (group = new CommitGroup(database)));
  return group.submit(work, durable);
}

const commitGroups = new WeakMap<Database, CommitGroup>();

interface GroupedWrite {
  work(trx: Transaction<DB>): Promise<unknown>;
  /** Must be on disk when answered (false: bookkeeping, durable with the next durable commit). */
  durable: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit for SQLite, where a durable commit (synchronous=FULL) costs an fsync and blocks the
 * one connection: the writes submitted while the event loop was busy run in one transaction, each
 * inside its own savepoint (a write that fails is rolled back alone and fails alone), and all are
 * answered only after that transaction's COMMIT returned, so none is acknowledged before it is
 * durable. A failed COMMIT fails every write of the group, none of which then committed. (Exported
 * for its test.)
 */
export class CommitGroup {
  /** The most turns of the event loop a group waits for more writes. */
  static readonly GROUP_TURNS = 4;
  private waiting: GroupedWrite[] = [];
  private scheduled = false;

  constructor(private readonly database: Database) {}

  submit<T>(work: (trx: Transaction<DB>) => Promise<T>, durable = true): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ work, durable, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      this.commitOnceQuiet(0, 0); // the first turn always counts as bringing writes: this one
    });
  }

  /**
   * Commits after a turn of the event loop whose I/O brought no further write: requests read in the
   * same turn join the group, and so do those that arrived while the group's requests were being
   * served (a turn's work takes milliseconds at 16 clients), up to GROUP_TURNS turns. A lone write
   * waits one turn with nothing to do (microseconds); an fsync is shared by more writes.
   */
  private commitOnceQuiet(turns: number, seen: number): void {
    setImmediate(() => {
      if (this.waiting.length > seen && turns + 1 < CommitGroup.GROUP_TURNS)
        this.commitOnceQuiet(turns + 1, this.waiting.length);
      else void this.commit();
    });
  }

  private async commit(): Promise<void> {
    this.scheduled = false;
    const group = this.waiting.splice(0);
    const outcomes: Array<{ value: unknown } | { error: unknown }> = [];
    const run = (db: Kysely<DB>) =>
      db.transaction().execute(async (trx) => {
        if (group.length === 1) {
          outcomes.push({ value: await group[0]!.work(trx) });
          return;
        }
        for (const write of group) {
          await sql`SAVEPOINT grouped_write`.execute(trx);
          try {
            outcomes.push({ value: await write.work(trx) });
          } catch (error) {
            outcomes.push({ error });
            // No savepoint to go back to: SQLite ended the whole transaction (a full disk, an I/O error),
            // so every write of the group fails with the error that ended it.
            await sql`ROLLBACK TO grouped_write`.execute(trx).catch(() => {
              throw error;
            });
          }
          await sql`RELEASE grouped_write`.execute(trx);
        }
      });
    try {
      if (group.some((write) => write.durable)) await run(this.database.db);
      else {
        // Bookkeeping alone (an Idempotency-Key's claims and stored answers) commits without its own fsync, as
        // on PostgreSQL (http/idempotency.ts): the write a claim guards commits durably after it, and that
        // fsync of the WAL file takes every frame before it along. The level is changed on the one
        // connection held for the whole transaction, so that no other commit runs at it.
        await this.database.db.connection().execute(async (db) => {
          await sql`PRAGMA synchronous = NORMAL`.execute(db);
          try {
            await run(db);
          } finally {
            await sql`PRAGMA synchronous = FULL`.execute(db);
          }
        });
      }
    } catch (error) {
      for (const write of group) write.reject(error);
      return;
    }
    group.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if ('error' in outcome) write.reject(outcome.error);
      else write.resolve(outcome.value);
    });
  }
}
