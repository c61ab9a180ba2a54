import type { Compilable, Transaction } from 'kysely';
import type { Executor } from '../store/database.js';
import type { DB } from '../store/schema.js';
import type { Role } from './access.js';

/**
 * Who acts, where, and under which request: the types every service takes, whatever the
 * transport (HTTP, the worker, the CLI). The HTTP layer produces them from credentials.
 */

/** Who performed an action, as recorded in history and audit rows. */
export interface Actor {
  type: 'api_key' | 'user' | 'system';
  id: number | null;
}

/** The system actor: operator commands and background work. */
export const SYSTEM_ACTOR: Actor = { type: 'system', id: null };

export type CredentialKind = 'api_key' | 'bearer';

/** A live API key as resolved from the presented secret. */
export interface ApiKeyRecord {
  id: number;
  organizationId: string;
  projectId: string | null;
  scopes: string[];
  tenantId: string | null;
  endUserId: string | null;
  lastUsedAt: string | null;
  expiresAt: string | null;
  /** The live project of the organization named by the request (or the key's lock), if any. */
  liveProjectId: string | null;
  /** The credentials clock (core/credentials-clock.ts) in the statement that read this record. */
  clock: number;
}

/** Who is calling, whichever credential family they used. */
export interface Principal {
  kind: CredentialKind;
  actor: Actor;
  /** The acting organization; null for a signed-in user who belongs to none. */
  organizationId: string | null;
  /** Bearer: the caller's role in the acting organization. */
  role: Role | null;
  scopes: string[];
  /** API key: the project resolved from its lock or X-Project-ID, if any. */
  projectId: string | null;
  userId: number | null;
  sessionId: number | null;
  key: ApiKeyRecord | null;
}

/**
 * The resolved scope of a data-plane request. Services build every query from this and never
 * read organization, project, tenant or end user from the body.
 */
export interface DataScope {
  actor: Actor;
  organizationId: string;
  projectId: string;
  /** '' outside the /v1 conversation plane. */
  tenantId: string;
  /** Set when the operation is end-user scoped (X-End-User-ID or the key's binding). */
  endUserId: string | null;
  key: ApiKeyRecord;
}

/** Who is acting, where, and under which request: everything a change records about itself. */
export interface WriteContext {
  actor: Actor;
  organizationId: string;
  projectId: string | null;
  requestId: string | null;
  /** Set for a request with an Idempotency-Key: how its writes are recognised when it is retried. */
  journal?: WriteJournal;
  /**
   * PostgreSQL: this process had heard every change committed before the request arrived when it
   * was authenticated (its listening connection caught up, Watch.caughtUp), so what the process
   * holds exact by notifications answers for the request (event subscriptions). Unset: unknown.
   */
  caughtUp?: boolean;
  /**
   * PostgreSQL: the request uses an API key held in memory without that wait; this is the
   * credentials clock the key was read at, and no write of the request may commit unless a
   * statement of it found the clock still there (core/credentials-clock.ts). Unset: verified.
   */
  heldAt?: number;
  /**
   * A person acting by bearer token was authorized by their role as read when the request arrived:
   * run in the write's transaction, this reads that role again and answers it, throwing what
   * authorization would answer now if it no longer passes (a demotion or removal committed
   * meanwhile), so nothing the old role allowed is written after it.
   */
  verifyActor?: (trx: Executor) => Promise<Role>;
}

/**
 * Exactly-once writes across a crash: each write of an idempotent request records its result in
 * the same transaction, so a retry after a crash between commit and answer is handed the committed
 * result instead of running the change again. Results must survive JSON.
 */
export interface WriteJournal {
  /** The result the next write of this request committed in an earlier attempt, if it did. */
  replay(): { value: unknown } | undefined;
  /**
   * The record of the result of the write now committing, sent in its transaction with its last statements
   * (core/unit-of-work.ts): `statement` must change exactly the request's claim row, and changing none means the
   * request no longer holds it (a retry took it over): the write is then rolled back and fails with `lost()`.
   * `recorded()` once it is in.
   */
  record(trx: Transaction<DB>, value: unknown): JournalRecord;
  /**
   * PostgreSQL: the record of the result of a write a grouped insert makes (core/grouped-statements.ts#groupedInsert),
   * written by that insert's own statement. `value` is the result but for the id of the row the statement
   * inserts, which goes at the member path `idAt` (the result is sealed before the row exists).
   */
  recordInserted(value: unknown, idAt: readonly string[]): InsertedRecord;
}

/** The record of a grouped insert's write (WriteJournal.recordInserted). */
export interface InsertedRecord {
  /** How the grouped statement records it: the same for every request. */
  shape: InsertedRecordShape;
  /** This write's values of `shape.columns`. */
  values: readonly unknown[];
  /** The statement inserted the row `id` and recorded the result with it. */
  recorded(id: number): void;
}

/** SQL of the journal's owner (http/idempotency.ts) that a grouped insert's statement runs for its journaled writes. */
export interface InsertedRecordShape {
  /** Columns of the statement's input a journaled write fills, with their PostgreSQL types (such statements hold journaled writes only). */
  columns: ReadonlyArray<readonly [name: string, type: string]>;
  /**
   * A SELECT of the `ord` of the writes in `given` whose request still holds its claim, locking the claim until the
   * statement commits: a write whose claim a retry took over is left out of the statement (and then fails as in write()).
   */
  held: string;
  /** An UPDATE recording the result of each row of `inserted` (joined with `input` on `ord`) in its request's claim. */
  record: string;
}

export interface JournalRecord {
  /** An UPDATE returning a row for each row it changed: the write commits only if it changed exactly one. */
  statement: Compilable;
  lost(): Error;
  recorded(): void;
}

/**
 * A statement a write needs run in its transaction but never reads back (history, outbox, audit
 * rows): the unit of work sends them together at the end, as one statement on PostgreSQL.
 */
export type PendingWrite = Compilable;

/** A person's live session, as a bearer token names it. */
export interface BearerSession {
  id: number;
  userId: number;
  scopes: string[];
  lastUsedAt: string | null;
}

/**
 * What authentication (http/auth.ts) reads of keys, sessions and memberships. The modules that own
 * those tables provide it and the composition root (services.ts) wires it in, so HTTP imports no module.
 */
export interface Credentials {
  /**
   * The live key a presented secret names, with the live project the request names (or the key is locked to);
   * `caughtUp` and `heldAt` as WriteContext has them (modules/org/resolved-keys.ts).
   */
  resolveKey(
    presented: string,
    requestedProjectId: string | undefined,
    checksClock: boolean,
  ): Promise<{ key: ApiKeyRecord; caughtUp: boolean; heldAt?: number } | undefined>;
  /** Records a key's last use (at most once a minute). */
  touchKey(key: ApiKeyRecord): Promise<void>;
  /** A held key whose credentials clock moved: the next resolution reads it afresh. */
  forgetKey(presented: string, requestedProjectId?: string): void;
  /** The live session a bearer token names: its signature checked, not revoked, not expired. */
  session(token: string): Promise<BearerSession | undefined>;
  /** Records a session's last use (at most once a minute). */
  touchSession(session: BearerSession): Promise<void>;
  /** A person's membership in an organization (their first one when none is named); through `db` inside a transaction. */
  membership(
    userId: number,
    organizationId?: string,
    db?: Executor,
  ): Promise<{ organizationId: string; role: string } | undefined>;
  /** A live project of an organization. */
  findProject(organizationId: string, projectId: string): Promise<{ id: string } | undefined>;
}
