import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sql } from 'kysely';
import { decrypt, deriveKey, encrypt, sha256Hex } from '../core/crypto.js';
import type { InsertedRecordShape, WriteJournal } from '../core/context.js';
import { bookkeeping } from '../core/commit-group.js';
import { groupedStatement } from '../core/grouped-statements.js';
import { answerSubject, IDEMPOTENCY_WINDOW_MS } from '../core/idempotency-keys.js';
import { canonicalJson } from '../core/json.js';
import type { Pseudonymize } from '../core/pseudonyms.js';
import type { Database, Executor } from '../store/database.js';
import { startPresence, type Presence } from '../store/presence.js';
import { AppError, invalid } from '../core/errors.js';
import { singleHeader } from './headers.js';
import { changesNothing } from './auth.js';

/**
 * Idempotency-Key on every write (POST, PUT, PATCH, DELETE) of every area, as one plugin; on a read sent as
 * POST (http/auth.ts#changesNothing) the key is accepted and not recorded.
 * The same key from the same principal for the same request within 24 hours replays the stored
 * status and body (`Idempotent-Replayed: true`); the same key for a different request is 422
 * idempotency_key_reused; a duplicate while the first is still running is 409 conflict.
 * This module owns the idempotency_keys table.
 *
 * Stored responses can hold secrets (a new API key, tokens), so they are sealed with AES-256-GCM
 * under a key derived from the service secret and the Idempotency-Key itself, which is stored only
 * as a digest: the table alone reveals nothing.
 */

export const IDEMPOTENCY = {
  windowMs: IDEMPOTENCY_WINDOW_MS,
  /**
   * A claim older than this with no stored response is taken to be abandoned. Only for claims whose process
   * cannot be proven gone (no presence mark: store/presence.ts); one proven gone is taken over at once.
   */
  lockMs: 5 * 60 * 1000,
} as const;

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const KEY = /^[\x21-\x7e]{1,255}$/;
/** Headers that change what a request means, so they are part of its fingerprint. */
const SCOPING_HEADERS = ['x-organization-id', 'x-project-id', 'x-tenant-id', 'x-end-user-id'];
const REPLAYED_HEADERS = ['content-type', 'location'];

interface Claim {
  principal: string;
  keyHash: string;
  /** The claim's `created_at`, which a retry taking it over replaces: this request's writes to the row match it. */
  createdAt: string;
  sealKey: Buffer;
  journal: WriteJournal;
  /** Results of this request's writes, committed with them (sealed in `committed`). */
  results: unknown[];
}

/** The official clients retry this (after Retry-After) within their deadline: the first request's answer is stored soon. */
const inProgress = () =>
  new AppError(
    'idempotency_in_progress',
    'A request with this Idempotency-Key is still in progress; retry shortly',
    undefined,
    { 'Retry-After': '1' },
  );
const takenOver = () =>
  new AppError('conflict', "A retry of this request took over its Idempotency-Key; the retry's answer is the one kept");

/**
 * The request's writes record their results in the claim row, in their own transactions; a retry
 * of a request whose writes committed but whose answer was never stored (the process died in
 * between) is handed those results in order instead of writing again. A write of a request whose
 * claim such a retry took over (it looked dead: its lock lapsed, or it had committed results and no
 * answer) finds the row no longer its own and fails, rolled back: the retry runs it.
 */
function journalFor(c: Omit<Claim, 'journal'>, earlier: unknown[]): WriteJournal {
  let next = 0;
  const recorded = (value: unknown) => {
    next++;
    c.results.push(value);
  };
  return {
    replay: () => (next < earlier.length ? { value: earlier[next++] } : undefined),
    record: (trx, value) => ({
      statement: trx
        .updateTable('idempotency_keys')
        .set({ committed: encrypt(c.sealKey, JSON.stringify([...c.results, value])), committed_id: null })
        .where('principal', '=', c.principal)
        .where('key_hash', '=', c.keyHash)
        .where('created_at', '=', c.createdAt)
        .returning(sql<number>`1`.as('recorded')),
      lost: takenOver,
      recorded: () => recorded(value),
    }),
    recordInserted: (value, idAt) => ({
      shape: INSERTED_RECORD,
      values: [
        c.principal,
        c.keyHash,
        c.createdAt,
        encrypt(
          c.sealKey,
          JSON.stringify({ results: [...c.results, value], insertedIdAt: idAt } satisfies SealedWithInserted),
        ),
      ],
      recorded: (id) => recorded(withIdAt(value, idAt, id)),
    }),
  };
}

/** The committed results when the last was recorded by a grouped insert: sealed before its row had an id (committed_id). */
interface SealedWithInserted {
  results: unknown[];
  insertedIdAt: readonly string[];
}

/** `value` with `id` at the member path `idAt` (set in place: the value is the write's own). */
function withIdAt(value: unknown, idAt: readonly string[], id: number): unknown {
  let target = value as Record<string, unknown>;
  for (const key of idAt.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[idAt.at(-1)!] = id;
  return value;
}

/** The results a request's writes committed, as a retry is handed them. */
function committedResults(sealKey: Buffer, committed: string | null, committedId: number | null): unknown[] {
  if (committed === null) return [];
  const sealed = JSON.parse(decrypt(sealKey, committed)) as unknown[] | SealedWithInserted;
  if (Array.isArray(sealed)) return sealed;
  withIdAt(sealed.results.at(-1), sealed.insertedIdAt, committedId!);
  return sealed.results;
}

/**
 * A grouped statement's claims are reached by key, one index lookup each, whatever PostgreSQL knows of the table.
 * Joined to the statement's input (a function scan it estimates at 100 rows, where a group holds a few), a plan made
 * while the table was small or unanalysed hash-joins a scan of every claim, and a connection keeps its plan: 13-15 ms a
 * statement at 30,000 claims. So each claim is locked through a LATERAL subquery with a LIMIT (CLAIM_OF; the rule of
 * core/grouped-statements.ts#groupedStatement), and written by an INSERT of the locked row that meets it ON CONFLICT
 * (UPSERT_CLAIM: the primary key's index finds it): it never inserts, since the row is locked until the statement
 * commits. Reached by key, not ctid: a claim updated since the statement's snapshot (an erasure's mark, a takeover) is
 * locked in its newest version and checked again there.
 */
const CLAIM_OF = (principal: string, keyHash: string, createdAt: string, extra = '') =>
  `SELECT principal, key_hash, fingerprint, created_at, locked_until, expires_at FROM idempotency_keys k
    WHERE k.principal = ${principal} AND k.key_hash = ${keyHash} AND k.created_at = ${createdAt}${extra} LIMIT 1 FOR UPDATE`;
const UPSERT_CLAIM = (columns: string[]) =>
  `INSERT INTO idempotency_keys (principal, key_hash, fingerprint, created_at, locked_until, expires_at, ${columns.join(', ')})`;

/**
 * How a grouped insert's statement records a journaled write (core/grouped-statements.ts#groupedInsert): it locks the
 * claim if the request still holds it (a takeover committed before leaves the write out; one after waits, then
 * finds the write's result), and writes the sealed result with the id of the row inserted.
 */
export const INSERTED_RECORD: InsertedRecordShape = {
  columns: [
    ['journal_principal', 'text'],
    ['journal_key_hash', 'text'],
    ['journal_created_at', 'timestamptz'],
    ['journal_committed', 'text'],
  ],
  held: `SELECT given.ord, claim.* FROM given CROSS JOIN LATERAL (${CLAIM_OF(
    'given.journal_principal',
    'given.journal_key_hash',
    'given.journal_created_at',
  )}) claim`,
  record: `${UPSERT_CLAIM(['committed', 'committed_id'])}
    SELECT held.principal, held.key_hash, held.fingerprint, held.created_at, held.locked_until, held.expires_at, input.journal_committed, inserted.id
    FROM inserted JOIN input USING (ord) JOIN held USING (ord)
    ON CONFLICT (principal, key_hash) DO UPDATE SET committed = excluded.committed, committed_id = excluded.committed_id`,
};

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: Claim | null;
  }
  interface FastifyContextConfig {
    /**
     * Run before a stored answer is replayed, with its body: throws (an AppError) when replaying it
     * would reveal what is no longer valid, such as the secret of a key revoked since.
     */
    replayCheck?: (request: FastifyRequest, body: string) => Promise<void>;
  }
}

function fingerprint(request: FastifyRequest): string {
  const headers = SCOPING_HEADERS.map((h) => request.headers[h] ?? null);
  return sha256Hex(canonicalJson([request.method, request.url, request.body ?? null, headers])!);
}

function principalOf(request: FastifyRequest): string {
  const p = request.principal;
  return p ? `${p.actor.type}:${p.actor.id}` : `anonymous:${request.ip}`;
}

type Outcome =
  | { committed: unknown[]; createdAt: string }
  | { replay: { status: number; headers: Record<string, string>; body: string } };

/**
 * PostgreSQL: the claims and the stored answers of requests arriving together go out as one statement each
 * (core/grouped-statements.ts#groupedStatement), and commit without waiting for their WAL flush
 * (`synchronous_commit = off` for their own transaction, set by the statement itself). Neither needs
 * a flush of its own: a write the request makes commits durably after the claim, and flushing its
 * commit flushes the WAL before it, the claim's included; a stored answer lost to a crash of the
 * database leaves its claim with the committed results and no answer, which a retry takes over and
 * answers from those results (the crash between commit and answer, above). A request that wrote
 * nothing and whose claim is lost runs again on retry, changing nothing the first run had not.
 * At one client this was two WAL flushes of three per idempotent write. Claims are inserted in key
 * order, so that two statements never wait for each other's keys in opposite orders.
 */
export const claimTogether = groupedStatement(
  [
    ['principal', 'text'],
    ['key_hash', 'text'],
    ['fingerprint', 'text'],
    ['created_at', 'timestamptz'],
    ['locked_until', 'timestamptz'],
    ['expires_at', 'timestamptz'],
    ['claimer', 'text'],
  ],
  `, claimed AS (INSERT INTO idempotency_keys (principal, key_hash, fingerprint, created_at, locked_until, expires_at, claimer)
    SELECT principal, key_hash, fingerprint, created_at, locked_until, expires_at, claimer FROM given ORDER BY principal, key_hash
    ON CONFLICT (principal, key_hash) DO NOTHING
    RETURNING principal, key_hash, set_config('synchronous_commit', 'off', true) AS async_commit)
  SELECT given.ord FROM claimed JOIN given USING (principal, key_hash)`,
);

export const storeTogether = groupedStatement(
  [
    ['principal', 'text'],
    ['key_hash', 'text'],
    ['created_at', 'timestamptz'],
    ['status', 'integer'],
    ['response', 'text'],
    ['subjects', 'text'],
    ['expires_at', 'timestamptz'],
  ],
  `, linked AS (INSERT INTO idempotency_answer_subjects (subject, principal, key_hash, expires_at)
    SELECT s.subject, given.principal, given.key_hash, given.expires_at FROM given, jsonb_array_elements_text(given.subjects::jsonb) AS s(subject)
    ON CONFLICT DO NOTHING),
  claim AS (SELECT given.ord, claim.* FROM given CROSS JOIN LATERAL (${CLAIM_OF(
    'given.principal',
    'given.key_hash',
    'given.created_at',
    ' AND k.erased_at IS NULL',
  )}) claim)
  ${UPSERT_CLAIM(['status', 'response'])}
    SELECT claim.principal, claim.key_hash, claim.fingerprint, claim.created_at, claim.locked_until, claim.expires_at, given.status, given.response
    FROM claim JOIN given USING (ord)
    ON CONFLICT (principal, key_hash) DO UPDATE SET status = excluded.status, response = excluded.response
    RETURNING set_config('synchronous_commit', 'off', true) AS async_commit`,
);

async function claim(
  database: Database,
  presence: Presence,
  db: Executor,
  c: Omit<Claim, 'journal' | 'results' | 'createdAt'>,
  print: string,
): Promise<Outcome> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = new Date();
    const row = {
      principal: c.principal,
      key_hash: c.keyHash,
      fingerprint: print,
      status: null,
      response: null,
      created_at: now.toISOString(),
      locked_until: new Date(now.getTime() + IDEMPOTENCY.lockMs).toISOString(),
      expires_at: new Date(now.getTime() + IDEMPOTENCY.windowMs).toISOString(),
      claimer: presence.mark(),
    };
    const inserted =
      database.dialect === 'postgres'
        ? // Two claims of one key in one statement would both see it inserted: they go in different statements.
          (
            await claimTogether(
              database,
              [
                row.principal,
                row.key_hash,
                row.fingerprint,
                row.created_at,
                row.locked_until,
                row.expires_at,
                row.claimer,
              ],
              [`${row.principal}\u0000${row.key_hash}`],
            )
          ).length > 0
        : (await db
            .insertInto('idempotency_keys')
            .values(row)
            .onConflict((oc) => oc.columns(['principal', 'key_hash']).doNothing())
            .returning(sql<number>`1`.as('claimed'))
            .executeTakeFirst()) !== undefined;
    if (inserted) return { committed: [], createdAt: row.created_at };

    const existing = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('principal', '=', c.principal)
      .where('key_hash', '=', c.keyHash)
      .executeTakeFirst();
    if (!existing) continue;
    const expired = existing.expires_at <= row.created_at;
    if (!expired && existing.fingerprint !== print) {
      throw new AppError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used for a different request',
        'Idempotency-Key',
      );
    }
    // The answer named memories or an end user since erased (core/idempotency-keys.ts#eraseStoredAnswers).
    if (!expired && existing.erased_at !== null) {
      throw new AppError(
        'gone',
        'The answer to this Idempotency-Key named memories that were since forgotten; it is no longer kept',
        'Idempotency-Key',
      );
    }
    // Writes committed without a stored answer: the attempt died between commit and answer. Take it over
    // at once and hand its committed results to the retry.
    const unanswered = !expired && existing.status === null && existing.committed !== null;
    // No answer and a claimer proven gone (killed; store/presence.ts): nothing of it runs any more, so the
    // retry need not wait out the lease. A write of it that was committing as it died is read below.
    const abandoned =
      existing.status === null &&
      (existing.locked_until <= row.created_at ||
        (existing.claimer !== null && (await presence.gone(db, existing.claimer))));
    if (expired || abandoned || unanswered) {
      // Take over an expired, abandoned or unanswered claim, unless another request just did. The results are
      // read as it is taken over: a write of the request taken over that committed since the read above counts.
      const taken = await db
        .updateTable('idempotency_keys')
        .set(expired ? { ...row, committed: null, committed_id: null } : row)
        .where('principal', '=', c.principal)
        .where('key_hash', '=', c.keyHash)
        .where('created_at', '=', existing.created_at)
        .returning(['committed', 'committed_id'])
        .executeTakeFirst();
      if (taken)
        return {
          committed: committedResults(c.sealKey, taken.committed, taken.committed_id),
          createdAt: row.created_at,
        };
      continue;
    }
    // status and response are stored together: no status means the first request is still running.
    if (existing.status === null || existing.response === null) throw inProgress();
    const stored = JSON.parse(decrypt(c.sealKey, existing.response)) as {
      headers: Record<string, string>;
      body: string;
    };
    return { replay: { status: existing.status, ...stored } };
  }
  throw inProgress();
}

async function store(
  database: Database,
  db: Executor,
  pseudonymize: Pseudonymize,
  request: FastifyRequest,
  reply: FastifyReply,
  c: Claim,
  payload: unknown,
): Promise<void> {
  const body =
    payload === null || payload === undefined
      ? ''
      : typeof payload === 'string'
        ? payload
        : Buffer.isBuffer(payload)
          ? payload.toString('utf8')
          : undefined;
  // A failed (5xx) or streamed response is not kept: the client may retry and run the request again,
  // unless a write of it committed, which the retry must then recognise (the claim stays, unanswered).
  // Either way only this request's claim is touched: once a retry took it over, the retry's answer is kept.
  if (reply.statusCode >= 500 || body === undefined) {
    if (c.results.length > 0) return;
    await db
      .deleteFrom('idempotency_keys')
      .where('principal', '=', c.principal)
      .where('key_hash', '=', c.keyHash)
      .where('created_at', '=', c.createdAt)
      .execute();
    return;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  const response = encrypt(c.sealKey, JSON.stringify({ headers, body }));
  // The subjects with the answer (SQLite: first): an erasure committing after finds them, and the guard on
  // erased_at leaves out an answer whose key an erasure already marked.
  const subjects = answerSubjects(pseudonymize, request, headers['content-type'], body);
  const expiresAt = new Date(new Date(c.createdAt).getTime() + IDEMPOTENCY.windowMs).toISOString();
  // PostgreSQL: the subjects go in the answer's own grouped statement (no commit of their own to wait for).
  if (database.dialect === 'postgres')
    await storeTogether(database, [
      c.principal,
      c.keyHash,
      c.createdAt,
      reply.statusCode,
      response,
      JSON.stringify(subjects),
      expiresAt,
    ]);
  else {
    if (subjects.length > 0) {
      await db
        .insertInto('idempotency_answer_subjects')
        .values(
          subjects.map((subject) => ({ subject, principal: c.principal, key_hash: c.keyHash, expires_at: expiresAt })),
        )
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
    await db
      .updateTable('idempotency_keys')
      .set({ status: reply.statusCode, response })
      .where('principal', '=', c.principal)
      .where('key_hash', '=', c.keyHash)
      .where('created_at', '=', c.createdAt)
      .where('erased_at', 'is', null)
      .execute();
  }
  request.idempotencyClaim = null;
}

/**
 * What a stored answer names, for its erasure with them: the end user the request was scoped to, and every
 * memory the body shows (an object with an id and a text, a memory_id, memory_ids). Reading the answer
 * itself keeps every write covered, present and future, without each route declaring it.
 */
function answerSubjects(
  pseudonymize: Pseudonymize,
  request: FastifyRequest,
  contentType: string | undefined,
  body: string,
): string[] {
  const subjects = new Set<string>();
  const scope = request.scope;
  if (scope?.endUserId)
    subjects.add(
      answerSubject.endUser(pseudonymize, {
        projectId: scope.projectId,
        tenantId: scope.tenantId,
        endUserId: scope.endUserId,
      }),
    );
  if (!contentType?.includes('json') || body === '') return [...subjects];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const object = value as Record<string, unknown>;
    if (typeof object.id === 'number' && typeof object.text === 'string') subjects.add(answerSubject.memory(object.id));
    if (typeof object.memory_id === 'number') subjects.add(answerSubject.memory(object.memory_id));
    if (Array.isArray(object.memory_ids))
      for (const id of object.memory_ids) if (typeof id === 'number') subjects.add(answerSubject.memory(id));
    Object.values(object).forEach(visit);
  };
  try {
    visit(JSON.parse(body));
  } catch {
    // Not JSON after all: only the end user names it.
  }
  return [...subjects];
}

export const idempotency = fp(
  async (
    app: FastifyInstance,
    opts: { database: Database; secretKey: Uint8Array; pseudonymize: Pseudonymize; failpoint?: string },
  ) => {
    const { database } = opts;
    const presence = await startPresence(database);
    app.addHook('onClose', () => presence.close());
    const master = deriveKey(opts.secretKey, 'idempotency');
    app.decorateRequest('idempotencyClaim', null);

    app.addHook('preHandler', async (request, reply) => {
      if (!WRITES.has(request.method) || !request.routeOptions.url) return;
      const raw = singleHeader(request, 'idempotency-key');
      if (raw === undefined) return;
      if (!KEY.test(raw))
        throw invalid('Idempotency-Key', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
      // A read sent as POST changes nothing: its key is checked like any, and not recorded.
      if (changesNothing(request.routeOptions.config.auth)) return;
      const principal = principalOf(request);
      const base = {
        principal,
        keyHash: sha256Hex(raw),
        sealKey: deriveKey(master, 'response', `${principal}\n${raw}`),
      };
      const print = fingerprint(request);
      const outcome = await bookkeeping(database, (db) => claim(database, presence, db, base, print));
      if (!('replay' in outcome)) {
        // Test failpoint (ENGRAM_TEST_FAILPOINT=idempotency-after-claim): die with the key claimed and nothing written.
        if (opts.failpoint === 'idempotency-after-claim') process.kill(process.pid, 'SIGKILL');
        const partial = { ...base, createdAt: outcome.createdAt, results: [...outcome.committed] };
        request.idempotencyClaim = { ...partial, journal: journalFor(partial, outcome.committed) };
        return;
      }
      const { status, headers, body } = outcome.replay;
      await request.routeOptions.config.replayCheck?.(request, body);
      return reply.code(status).headers(headers).header('idempotent-replayed', 'true').send(body);
    });

    app.addHook('onSend', async (request, reply, payload) => {
      const c = request.idempotencyClaim;
      if (!c) return payload;
      // Test failpoint (ENGRAM_TEST_FAILPOINT=idempotency-after-commit): die between a committed write and its stored answer.
      if (opts.failpoint === 'idempotency-after-commit' && reply.statusCode < 400) process.kill(process.pid, 'SIGKILL');
      await bookkeeping(database, (db) => store(database, db, opts.pseudonymize, request, reply, c, payload));
      return payload;
    });
  },
);
