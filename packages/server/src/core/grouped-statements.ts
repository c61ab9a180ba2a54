import { CompiledQuery } from 'kysely';
import type { Database } from '../store/database.js';
import { auditInsertPerInsertedRow } from './audit-log.js';
import type { InsertedRecord, InsertedRecordShape, WriteContext } from './context.js';
import { CLOCK_NOW_SQL, CredentialsMoved } from './credentials-clock.js';
import { receiversFor } from './event-subscriptions.js';
import { notifyEventsCommitted, outboxInsertPerInsertedRow, type EventKind } from './events.js';

/**
 * PostgreSQL group commit of fixed statements: the single-row inserts of many requests as one statement
 * (groupedInsert), and bookkeeping or reads of many requests as one (groupedStatement), both through StatementGroup.
 */

/** A column of a grouped insert's input rows: its name and PostgreSQL type. */
export type InputColumn = readonly [name: string, type: string];

/** What a grouped insert writes; its SQL is fixed text, every value of a write comes through `input`. */
export interface GroupedInsertShape {
  /** The owning module's values of each write, as columns of `input` ('json' and 'jsonb' values are given as JSON text). */
  columns: readonly InputColumn[];
  /**
   * Data-modifying CTEs run in order, reading `input` (one row per write: the columns above, its
   * position `ord`, and the write context's `ctx_organization_id`, `ctx_project_id`, `ctx_actor_type`,
   * `ctx_actor_id`, `ctx_request_id`, `ctx_now`; a write whose held credentials' clock moved is not
   * in it); the last, named `inserted`, yields the rows that landed, each with the `ord` of its write.
   */
  steps: ReadonlyArray<readonly [name: string, statement: string]>;
  /** The owning module's further inserts, reading `inserted` joined with `input` on `ord`. */
  rows: readonly string[];
  /** The audit row of each landed write, whose target is the inserted row. */
  audit: { action: string; targetType: string };
  /**
   * The event of each landed write, carrying the inserted row; its payload is the write's
   * `eventJson`, built only when a subscription may receive it (core/event-subscriptions.ts).
   */
  event?: EventKind;
  /**
   * Keys that two writes of one statement must not share, because the second would conflict with
   * the first (a duplicate of it): such a write goes in the next statement, and meets the first there.
   */
  exclusive(values: readonly unknown[]): string[];
}

const CONTEXT_COLUMNS: readonly InputColumn[] = [
  ['ctx_organization_id', 'text'],
  ['ctx_project_id', 'text'],
  ['ctx_actor_type', 'text'],
  ['ctx_actor_id', 'bigint'],
  ['ctx_request_id', 'text'],
  ['ctx_now', 'timestamptz'],
  ['ctx_event_payload', 'jsonb'],
  ['ctx_held_at', 'bigint'],
];

/** At most this many writes share a statement (its JSON parameter stays small). */
const GROUP_LIMIT = 64;
/**
 * One statement of a grouped insert under way per process, so that groups grow with the load; up
 * to STALLED_LIMIT when the oldest has taken STALL_MS (waiting for a row lock another transaction
 * holds, say), so that one slow statement does not hold up every add of the process.
 */
const STALL_MS = 20;
const STALLED_LIMIT = 4;
/** At most this long a grouped insert's next statement waits for the writers its last one answered (Gather). */
const GATHER_LIMIT_MS = 4;
/**
 * Gather joins two halves only into a statement of at most this many writes: past it the statement's fixed cost
 * (its commit, WAL flush and round trip, ~0.5 ms of CPU) is spread thinly enough that serving one half while the
 * other's statement runs is worth more (one process at 16 clients: 0.87 of the adds a second when joined).
 */
const GATHER_UP_TO = 8;

/**
 * PostgreSQL group commit of single-row inserts. A write that is one INSERT whose audit row, event
 * and further rows depend only on the row it inserts joins the other such writes submitted in the
 * same turn of the event loop, or while the shape's previous statement was under way: all go out as ONE statement (their values as one JSON parameter
 * read by json_to_recordset, then the shape's data-modifying CTEs, the events and the audit rows),
 * without BEGIN and COMMIT, since one statement is atomic. One round trip, one commit and one WAL
 * flush for the group instead of one each: under concurrent load most of a single write's cost in
 * both processes is per statement, not per row. Each write is answered with its inserted row, or
 * undefined when its insert did not land (ON CONFLICT DO NOTHING; the shape's other steps still took
 * effect): the caller then takes write(). A write of a request using a held key (WriteContext.heldAt)
 * takes part only if the statement finds the credentials clock where the key was read, and is
 * otherwise refused with CredentialsMoved, having written nothing. Should the statement fail, each of its writes is retried
 * in a statement of its own, so a write fails only for its own reason. A write alone, with no
 * statement under way, goes out at once as a group of one. A write of a request with an Idempotency-Key brings the
 * record of its result (WriteJournal.recordInserted), which the statement writes in the request's claim with the id of
 * the row it inserted; such writes go in statements of their own kind, which leave out a write whose claim a retry took
 * over (it then lands nowhere, and write() fails it as it fails any write of such a request).
 */
export function groupedInsert(shape: GroupedInsertShape) {
  if (shape.steps.at(-1)?.[0] !== 'inserted') throw new Error('groupedInsert: the last step must be named inserted');
  const statements = new Map<InsertedRecordShape | undefined, { text: string; columns: readonly InputColumn[] }>();
  /** The statement of writes without a journal, or (`journal`) of writes that record their results in their request's journal. */
  const statementFor = (journal: InsertedRecordShape | undefined) => {
    let statement = statements.get(journal);
    if (!statement) statements.set(journal, (statement = groupedInsertStatement(shape, journal)));
    return statement;
  };
  const groups = new WeakMap<Database, Map<InsertedRecordShape | undefined, StatementGroup>>();
  const run = async <Row extends { id: number }>(
    database: Database,
    ctx: WriteContext,
    now: string,
    values: readonly unknown[],
    eventPayload?: () => string,
    journaled?: InsertedRecord,
  ): Promise<Row | undefined> => {
    if (database.dialect !== 'postgres') throw new Error('groupedInsert: PostgreSQL writes only');
    if ((ctx.journal === undefined) !== (journaled === undefined))
      throw new Error('groupedInsert: a journaled write exactly when the request has a journal');
    if (values.length !== shape.columns.length) throw new Error('groupedInsert: one value per column');
    if ((eventPayload === undefined) !== (shape.event === undefined))
      throw new Error('groupedInsert: an event payload exactly when the shape emits one');
    // The event's payload is built only if someone may receive it; a write without one carries null (no event row).
    let event: string | null = null;
    if (shape.event) {
      const receives = await receiversFor(database, database.db, ctx);
      if (!receives || receives(ctx.projectId, shape.event)) event = eventPayload!();
    }
    let byJournal = groups.get(database);
    if (!byJournal) groups.set(database, (byJournal = new Map()));
    let group = byJournal.get(journaled?.shape);
    if (!group) {
      const { text, columns } = statementFor(journaled?.shape);
      byJournal.set(journaled?.shape, (group = new StatementGroup(database, text, columns, undefined, true)));
    }
    const contextValues = [
      ctx.organizationId,
      ctx.projectId,
      ctx.actor.type,
      ctx.actor.id,
      ctx.requestId,
      now,
      event ?? 'null',
      ctx.heldAt ?? null,
    ];
    const { ord, rows } = await group.submit(
      [...contextValues, ...(journaled?.values ?? []), ...values],
      shape.exclusive(values),
    );
    if (ctx.heldAt !== undefined && ctx.heldAt !== Number(rows[0]!.ctx_clock)) throw new CredentialsMoved();
    const landed = rows.find((row) => row.ord === ord);
    if (!landed) return undefined;
    if (event !== null) notifyEventsCommitted();
    const { ord: _, ctx_clock: __, ...row } = landed;
    journaled?.recorded((row as unknown as Row).id);
    return row as unknown as Row;
  };
  // The whole statement of writes without a journal, or with `journal`'s (for a test of its plan).
  return Object.assign(run, { textFor: (journal?: InsertedRecordShape) => statementFor(journal).text });
}

/** The text and input columns of a grouped insert's statement; with `journal`, each write is left out unless its request still holds its claim, and its result is recorded there. */
function groupedInsertStatement(shape: GroupedInsertShape, journal: InsertedRecordShape | undefined) {
  const columns = [...CONTEXT_COLUMNS, ...(journal?.columns ?? []), ...shape.columns];
  const ctes: Array<readonly [string, string]> = [
    [
      'given',
      `SELECT * FROM json_to_recordset($1::json) AS given(ord integer, ${columns.map(([name, type]) => `${name} ${type}`).join(', ')})`,
    ],
    ['clock', `SELECT ${CLOCK_NOW_SQL} AS generation`],
    ...(journal ? [['held', journal.held] as const] : []),
    // A write of a request using a held key whose clock moved is left out of every step (CredentialsMoved), as is one whose claim was taken over.
    [
      'input',
      `SELECT given.* FROM given, clock WHERE (given.ctx_held_at IS NULL OR given.ctx_held_at = clock.generation)${journal ? ' AND given.ord IN (SELECT ord FROM held)' : ''}`,
    ],
    ...shape.steps,
    ...[
      ...shape.rows,
      ...(shape.event ? [outboxInsertPerInsertedRow(shape.event)] : []),
      auditInsertPerInsertedRow(shape.audit.action, shape.audit.targetType),
      ...(journal ? [journal.record] : []),
    ].map((statement, i) => [`effect_${i}`, statement] as const),
  ];
  // One row at least, so that the clock comes back when nothing landed.
  const text = `WITH ${ctes.map(([name, statement]) => `${name} AS (${statement})`).join(',\n')}\nSELECT inserted.*, clock.generation AS ctx_clock FROM clock LEFT JOIN inserted ON true`;
  return { text, columns };
}

/** A grouped statement's rows, and the `ord` of the write they answer (StatementGroup). */
interface GroupAnswer {
  ord: number;
  rows: ReadonlyArray<Record<string, unknown> & { ord: number | null }>;
}

/** A request's rows as a statement of its own would give them (without `ord`), for a group of one (groupedStatement). */
type Alone = (
  database: Database,
  values: readonly unknown[],
) => Promise<Array<Record<string, unknown> & { ord?: number | null }>>;

interface StatementWrite {
  values: readonly unknown[];
  exclusive: readonly string[];
  resolve(answer: GroupAnswer): void;
  reject(error: unknown): void;
}

/**
 * PostgreSQL: the writes of one fixed statement submitted in the same turn of the event loop, or while the
 * previous statement was under way, sent as one statement (their values as one JSON parameter, each with its
 * position `ord`); each is answered with the statement's rows. One statement under way at a time, so that
 * groups grow with the load; up to STALLED_LIMIT when the oldest has taken STALL_MS (waiting for a row lock
 * another transaction holds, say), so that one slow statement does not hold up the rest. Writes sharing an
 * `exclusive` key go in different statements. Should PostgreSQL refuse a statement, each of its writes is tried
 * in a statement of its own, so a write fails only for its own reason.
 */
class StatementGroup {
  private waiting: StatementWrite[] = [];
  private scheduled = false;
  /** The statements under way, with when each started (performance.now()). */
  private readonly underWay = new Set<{ started: number }>();
  private stallTimer: NodeJS.Timeout | undefined;
  /** With `gathers`: when the next statement waits for the writers the last one answered (Gather). */
  private readonly gather: Gather | undefined;
  private readonly keys: ReadonlyArray<readonly [key: string, embedded: boolean]>;

  constructor(
    private readonly database: Database,
    private readonly text: string,
    columns: readonly InputColumn[],
    private readonly alone?: Alone,
    gathers = false,
  ) {
    if (gathers) this.gather = new Gather(() => this.flush());
    this.keys = columns.map(([name, type]) => [`,"${name}":`, type === 'json' || type === 'jsonb'] as const);
  }

  submit(values: readonly unknown[], exclusive: readonly string[]): Promise<GroupAnswer> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ values, exclusive, resolve, reject });
      this.gather?.arrived();
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // After the I/O of this turn of the event loop: the writes of requests read in the same turn join.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /** Sends the waiting writes as groups while a statement may start (STALL_MS); the rest wait for the next to finish. */
  private flush(): void {
    while (
      this.waiting.length > 0 &&
      this.mayStart() &&
      !(this.underWay.size === 0 && this.gather?.holds(this.waiting.length))
    ) {
      const group: StatementWrite[] = [];
      const taken = new Set<string>();
      const later: StatementWrite[] = [];
      for (const write of this.waiting) {
        if (group.length >= GROUP_LIMIT || write.exclusive.some((key) => taken.has(key))) later.push(write);
        else {
          group.push(write);
          for (const key of write.exclusive) taken.add(key);
        }
      }
      this.waiting = later;
      const statement = { started: performance.now() };
      this.underWay.add(statement);
      void this.run(group).finally(() => {
        this.underWay.delete(statement);
        this.gather?.answered(group.length, this.waiting.length, statement.started);
        this.flush();
      });
    }
    if (this.waiting.length > 0 && !this.stallTimer) {
      // Should the statement under way stall, the writes waiting go out beside it.
      this.stallTimer = setTimeout(() => {
        this.stallTimer = undefined;
        this.flush();
      }, STALL_MS);
      this.stallTimer.unref();
    }
  }

  private mayStart(): boolean {
    if (this.underWay.size === 0) return true;
    if (this.underWay.size >= STALLED_LIMIT) return false;
    const now = performance.now();
    for (const { started } of this.underWay) if (now - started < STALL_MS) return false;
    return true;
  }

  private async run(group: StatementWrite[]): Promise<void> {
    let rows: GroupAnswer['rows'];
    try {
      if (group.length === 1 && this.alone) {
        const own = await this.alone(this.database, group[0]!.values);
        for (const row of own) row.ord = 0;
        rows = own as GroupAnswer['rows'];
      } else
        rows = (
          await this.database.db.executeQuery<GroupAnswer['rows'][number]>(
            CompiledQuery.raw(this.text, [this.inputJson(group)]),
          )
        ).rows;
    } catch (error) {
      // PostgreSQL refused the statement (it has an SQLSTATE), so none of it took effect: each write
      // is tried alone. A lost connection may have lost the answer of a commit: that fails them all.
      const refused =
        typeof (error as { code?: unknown }).code === 'string' &&
        /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
      if (group.length === 1 || !refused) for (const write of group) write.reject(error);
      else for (const write of group) void this.run([write]);
      return;
    }
    group.forEach((write, ord) => write.resolve({ ord, rows }));
  }

  /** The writes as json_to_recordset reads them; JSON text values ('json' and 'jsonb' columns) are embedded as they are. */
  private inputJson(group: StatementWrite[]): string {
    return `[${group
      .map((write, ord) => {
        let object = `{"ord":${ord}`;
        this.keys.forEach(([key, embedded], i) => {
          const value = write.values[i];
          object += key + (embedded ? (value as string) : JSON.stringify(value ?? null));
        });
        return `${object}}`;
      })
      .join(',')}]`;
  }
}

/**
 * Whether a grouped insert's next statement waits for the writers the last one answered. Under steady load
 * the requesters of a statement's writes send their next ones soon after their answers; sent at once, the next
 * statement carries only those that came meanwhile, and the writes settle into two alternating halves, each
 * statement (a commit, a WAL flush) carrying half of them. Waiting for the answered ones to return joins the halves,
 * which pays when they return faster than a statement takes (its database is busy: several processes' statements,
 * say): then it waits until as many writes wait as the last statement carried and as waited beside it, for no longer
 * than that statement took (nor GATHER_LIMIT_MS). When they return more slowly (this process's own work on them is
 * what they wait for), each half's statement runs while the other half is served, and nothing waits. The two times
 * are running averages, the return measured whether or not the statement waits.
 */
export class Gather {
  private last = { writes: 0, waiting: 0, at: 0, took: 0 };
  /** Writes arrived since the last answer; undefined once as many as it answered arrived. */
  private returned: number | undefined;
  private returnMs: number | undefined;
  private statementMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly flush: () => void) {}

  /** A statement of `writes` ended, `waiting` waiting then. */
  answered(writes: number, waiting: number, started: number): void {
    const at = performance.now();
    // The writers of the statement before had not all returned by now: they return in at least this long.
    if (this.returned !== undefined) this.returnMs = average(this.returnMs, at - this.last.at);
    this.last = { writes, waiting, at, took: at - started };
    this.statementMs = average(this.statementMs, this.last.took);
    this.returned = 0;
  }

  arrived(): void {
    if (this.returned === undefined || ++this.returned < this.last.writes) return;
    this.returned = undefined;
    this.returnMs = average(this.returnMs, performance.now() - this.last.at);
  }

  /** Whether the next statement waits, with `waiting` writes waiting and none under way. */
  holds(waiting: number): boolean {
    const { writes, waiting: beside, at, took } = this.last;
    if (this.returnMs === undefined || this.returnMs >= this.statementMs!) return false;
    if (waiting >= writes + beside || writes + beside > GATHER_UP_TO) return false;
    const left = at + Math.min(took, GATHER_LIMIT_MS) - performance.now();
    if (left <= 0) return false;
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, left);
      this.timer.unref();
    }
    return true;
  }
}

/** A running average giving the newest figure an eighth of the weight. */
const average = (mean: number | undefined, figure: number) =>
  mean === undefined ? figure : mean + (figure - mean) / 8;

/**
 * PostgreSQL: a statement of fixed text run for many requests at once (StatementGroup), for bookkeeping whose rows
 * are each one write's own, or a read of each request's own rows. `body` follows `WITH given AS (…)`, the requests'
 * values as columns of `given` (and their position `ord`), and returns each one's rows with its `ord`; the function
 * answers a request with its rows. `exclusive`: keys two writes of one statement must not share. `alone`: the same
 * rows from a statement of the request's own, run for a group of one (a request with none beside it is not made to
 * pay for reading its values as JSON). The function's `text` is the whole statement (for a test of its plan).
 * A body joining `given` to a table should reach the table through a LATERAL subquery the planner cannot flatten
 * (a LIMIT or OFFSET in it): `given` is a function scan of unknown size, and without statistics for the table the
 * planner may hash-join it to a scan of the whole table.
 */
export function groupedStatement(columns: readonly InputColumn[], body: string, alone?: Alone) {
  const text = `WITH given AS (SELECT * FROM json_to_recordset($1::json) AS given(ord integer, ${columns.map(([name, type]) => `${name} ${type}`).join(', ')}))\n${body}`;
  const groups = new WeakMap<Database, StatementGroup>();
  const run = async <Row>(
    database: Database,
    values: readonly unknown[],
    exclusive: readonly string[] = [],
  ): Promise<Row[]> => {
    if (database.dialect !== 'postgres') throw new Error('groupedStatement: PostgreSQL only');
    let group = groups.get(database);
    if (!group) groups.set(database, (group = new StatementGroup(database, text, columns, alone)));
    const { ord, rows } = await group.submit(values, exclusive);
    return rows.filter((row) => row.ord === ord) as Row[];
  };
  return Object.assign(run, { text });
}
