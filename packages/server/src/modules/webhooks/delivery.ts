import { createHmac, randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { BaseLogger } from 'pino';
import { sql } from 'kysely';
import { SYSTEM_ACTOR } from '../../core/context.js';
import { isPseudonym, renamedJson, type Pseudonymize } from '../../core/pseudonyms.js';
import {
  dispatchOutbox,
  erasedMemory,
  onEventsCommitted,
  type OutboxDispatcher,
  type StoredEvent,
} from '../../core/events.js';
import { checkAddress, OutboundRefused } from '../../core/outbound.js';
import { write } from '../../core/unit-of-work.js';
import { decodeJson, jsonRows, nowIso, type Database, type Executor } from '../../store/database.js';
import { notifyDeliveriesDue, onDeliveriesDue } from './due.js';
import { openSecret, policyOf, retryConfigOf, subscribeEndpoint, type WebhookSettings } from './endpoints.js';

/** Response bodies are kept (and read) up to this many bytes; the rest is never read. */
export const RESPONSE_CAPTURE_BYTES = 2048;
/** Deliveries attempted at once by one process, and at most this many for one endpoint, so a slow receiver cannot stall the others. */
const CONCURRENCY = 64;
const PER_ENDPOINT = 8;
const CLAIM_BATCH = CONCURRENCY / 4;
/**
 * An attempt's slot is free once its answer is in, before its outcome is recorded (its lease keeps the
 * delivery from being claimed again meanwhile), so attempts go on while a batch is written; claims wait
 * while this many outcomes are still to be written (a slow database then slows delivery instead of
 * piling outcomes up). A batch is written in transactions of at most RECORD_BATCH.
 */
const MAX_UNRECORDED = CONCURRENCY * 4;
const RECORD_BATCH = 500;
/** How often an idle loop looks for work committed by other processes; commits in this process wake it at once. */
const IDLE_POLL_MS = 200;
/**
 * Outbox reads start at least this far apart: under a stream of writes each read takes the events
 * of many commits (one transaction for them all) instead of running once per commit beside them.
 */
const DISPATCH_GAP_MS = 10;
/** A lease outlives the attempt deadline by this much, for recording the outcome; then a dead process's deliveries are taken over. */
const LEASE_MARGIN_MS = 5000;

// Keep-alive pools (sockets are keyed by host and port, each connected to an address checked when it was
// opened), as large as the loop's concurrency, so a request never waits in a pool behind a slow receiver.
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

export const newMessageId = () => `msg_${randomBytes(12).toString('base64url')}`;

/** The body every delivery sends: `{type, timestamp, data}`, fixed when the delivery is made, so a retry sends the same bytes. */
export function messageBody(type: string, timestamp: string, data: unknown): string {
  return JSON.stringify({ type, timestamp, data });
}

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the secret's base64 key. */
export function sign(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * The outbox dispatcher: in the transaction that marks events dispatched, one delivery row per
 * event and subscribed endpoint of its project (events without a project, such as organization-wide
 * API keys, go to every endpoint of the organization). Paused endpoints get rows too; disabled ones do not.
 */
export const fanOut =
  (pseudonymize: Pseudonymize): OutboxDispatcher =>
  async (trx, events, payloadsOf) => {
    const organizations = [...new Set(events.map((e) => e.organizationId))];
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'organization_id', 'project_id', 'events'])
      .where('organization_id', 'in', organizations)
      .where('status', '!=', 'disabled')
      .execute();
    if (endpoints.length === 0) return;
    const subscribed = endpoints.map((e) => ({ ...e, events: new Set(decodeJson<string[]>(e.events)) }));
    const targeted = events.flatMap((event: StoredEvent) => {
      const targets = subscribed.filter(
        (e) =>
          e.organization_id === event.organizationId &&
          e.events.has(event.type) &&
          (event.projectId === null || e.project_id === event.projectId),
      );
      return targets.length > 0 ? [{ event, targets }] : [];
    });
    const payloads = await payloadsOf(targeted.map(({ event }) => event));
    const now = nowIso();
    const rows = targeted.flatMap(({ event, targets }, i) => {
      const payload = payloads[i]!;
      const messageId = newMessageId();
      const body = messageBody(event.type, event.createdAt, payload);
      const named = payload as { memory?: { id?: number; end_user_id?: string }; end_user_id?: string };
      const memory = named.memory?.id ?? null;
      const endUser = named.end_user_id ?? named.memory?.end_user_id;
      // An event of a purge names the end user by pseudonym already.
      const endUserKey =
        endUser === undefined || event.projectId === null
          ? null
          : isPseudonym(endUser)
            ? endUser
            : pseudonymize(event.projectId, endUser);
      return targets.map((e) => ({
        endpoint_id: e.id,
        message_id: messageId,
        event_type: event.type,
        memory_id: memory,
        end_user_key: endUserKey,
        body,
        status: 'pending',
        next_attempt_at: now,
        lease_until: null,
        created_at: now,
        updated_at: now,
      }));
    });
    for (let i = 0; i < rows.length; i += 500)
      await trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 500))
        .execute();
    // The loop dispatching these events claims after their transaction has committed.
    if (rows.length > 0) notifyDeliveriesDue();
  };

/**
 * What receivers answered to `deliveries` (webhook_attempts.response_body, the first 2 KiB, which may echo
 * what was sent) is erased; the status, latency and error of each attempt stay.
 */
async function eraseReceiverAnswers(trx: Executor, deliveries: number[]): Promise<void> {
  for (let i = 0; i < deliveries.length; i += 500) {
    await trx
      .updateTable('webhook_attempts')
      .set({ response_body: null })
      .where('delivery_id', 'in', deliveries.slice(i, i + 500))
      .where('response_body', 'is not', null)
      .execute();
  }
}

/** Forgetting: stored deliveries of a forgotten memory keep its id and nothing else, and their receivers' answers are erased. */
export async function eraseMemoryDeliveries(
  trx: Executor,
  memoryIds: number[],
  rewrittenIds: number[] = [],
): Promise<void> {
  const all = [...memoryIds, ...rewrittenIds];
  if (all.length === 0) return;
  const rewritten = new Set(rewrittenIds);
  const rows = await trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'memory_id', 'body'])
    .where('memory_id', 'in', all)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const sent = JSON.parse(row.body) as { type: string; timestamp: string };
    await trx
      .updateTable('webhook_deliveries')
      .set({ body: messageBody(sent.type, sent.timestamp, { memory: erasedMemory(row.memory_id!, rewritten) }) })
      .where('id', '=', row.id)
      .execute();
  }
  await eraseReceiverAnswers(
    trx,
    rows.map((r) => r.id),
  );
}

/**
 * Removing an end user: every delivery whose event named them (found by their pseudonym, `end_user_key`) names the
 * pseudonym instead, still to be sent or kept for its retention, and what receivers answered to it is erased.
 */
export async function eraseEndUserDeliveries(trx: Executor, endUserId: string, pseudonym: string): Promise<void> {
  const rows = await trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'body'])
    .where('end_user_key', '=', pseudonym)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const body = renamedJson(row.body, endUserId, pseudonym);
    if (body !== undefined)
      await trx.updateTable('webhook_deliveries').set({ body }).where('id', '=', row.id).execute();
  }
  await eraseReceiverAnswers(
    trx,
    rows.map((r) => r.id),
  );
}

interface Outcome {
  statusCode: number | null;
  body: string | null;
  error: string | null;
  latencyMs: number;
}

/**
 * One attempt: the host is resolved and every address checked again (SSRF), and the socket goes
 * to the checked address; redirects are not followed (a 3xx fails); a 2xx within the deadline
 * succeeds; at most RESPONSE_CAPTURE_BYTES of the answer are read, then the connection is dropped.
 */
export async function attempt(
  settings: WebhookSettings,
  target: string,
  headers: Record<string, string>,
  body: string,
): Promise<Outcome> {
  const started = performance.now();
  const done = (statusCode: number | null, text: string | null, error: string | null): Outcome => ({
    statusCode,
    body: text,
    error,
    latencyMs: Math.round(performance.now() - started),
  });
  let url: URL;
  let address: string;
  try {
    url = new URL(target);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && settings.allowHttp))
      throw new OutboundRefused(`${url.protocol} receivers are not allowed`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    if (addresses.length === 0) throw new OutboundRefused(`${host} does not resolve`);
    for (const a of addresses) checkAddress(policyOf(settings), host, a);
    address = addresses[0]!;
  } catch (error) {
    return done(null, null, error instanceof Error ? error.message : String(error));
  }
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    // A connection whose answer was read to the end goes back to the keep-alive pool; any other is dropped.
    const finish = (outcome: Outcome, reusable = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (!reusable) req.destroy();
      resolve(outcome);
    };
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        // The connection goes to the address checked above, whatever a second resolution would say.
        lookup: (_hostname, options, callback) => {
          const family = isIP(address);
          if ((options as { all?: boolean }).all)
            (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
              { address, family },
            ]);
          else callback(null, address, family);
        },
        agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const parts: Buffer[] = [];
        let size = 0;
        const complete = (reusable: boolean) =>
          finish(
            done(
              status,
              Buffer.concat(parts).subarray(0, RESPONSE_CAPTURE_BYTES).toString('utf8'),
              status >= 200 && status < 300 ? null : `HTTP ${status}`,
            ),
            reusable,
          );
        res.on('data', (chunk: Buffer) => {
          parts.push(chunk);
          size += chunk.length;
          if (size > RESPONSE_CAPTURE_BYTES) complete(false);
        });
        res.on('end', () => complete(true));
        res.on('error', () => complete(false));
      },
    );
    const deadline = setTimeout(
      () => finish(done(null, null, `no answer within ${settings.timeoutMs / 1000} s`)),
      settings.timeoutMs,
    );
    req.on('error', (error) => finish(done(null, null, error.message)));
    req.end(body);
  });
}

interface Claimed {
  id: number;
  endpoint_id: number;
  message_id: string;
  body: string;
  next_step: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  retry_config: unknown;
  /** As claimed: its outcome moves the delivery on only if neither changed since (not taken over, not queued again). */
  lease_until: string;
  updated_at: string;
}

interface Finished {
  delivery: Claimed;
  outcome: Outcome;
  at: string;
}

/**
 * Background delivery: drains the outbox into delivery rows (fanOut, registered as a dispatcher)
 * and attempts due deliveries, each under a lease longer than the attempt deadline (rows claimed
 * with SKIP LOCKED on PostgreSQL), so several processes share the work and never attempt one
 * delivery twice at once; a process killed mid-attempt leaves a lease that simply expires.
 * Outcomes are recorded in batches (one transaction for every attempt finished meanwhile: the
 * attempts in one INSERT, the deliveries' next steps in one UPDATE, their endpoints' health in one),
 * while the next attempts go on: a slot is free once its answer is in.
 */
export class DeliveryLoop {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private unsubscribe: (() => void) | null = null;
  private readonly inFlight = new Map<number, Promise<void>>();
  private readonly perEndpoint = new Map<number, number>();
  private finished: Finished[] = [];
  private recording: Promise<void> | null = null;
  private readonly secrets = new Map<string, string>();
  private outboxDirty = true;
  private claimsDue = true;
  private lastDispatch = 0;
  /** Rounds in a row that failed. */
  private failures = 0;

  constructor(
    private readonly database: Database,
    private readonly settings: WebhookSettings,
    private readonly dispatchers: readonly OutboxDispatcher[],
    private readonly log: Pick<BaseLogger, 'warn'>,
  ) {}

  start(): void {
    this.running = true;
    const stopEvents = onEventsCommitted(() => {
      this.outboxDirty = true;
      this.wake?.();
    });
    const stopDue = onDeliveriesDue(() => {
      this.claimsDue = true;
      this.wake?.();
    });
    this.unsubscribe = () => {
      stopEvents();
      stopDue();
    };
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.wake?.();
    await this.loop;
    await Promise.all(this.inFlight.values());
    while (this.recording) await this.recording;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let busy = false;
      try {
        // The outbox is read only when something may have been committed (a wake-up, a poll) or is left over.
        if (this.outboxDirty) {
          const wait = this.lastDispatch + DISPATCH_GAP_MS - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          this.lastDispatch = Date.now();
          this.outboxDirty = false;
          busy = (await dispatchOutbox(this.database, this.dispatchers)) > 0;
          this.outboxDirty = busy;
        }
        // Claims are taken in batches (a quarter of the slots at least, or whatever is due when idle): each is a transaction.
        const free = CONCURRENCY - this.inFlight.size;
        if (
          this.claimsDue &&
          (free >= CLAIM_BATCH || this.inFlight.size === 0) &&
          this.finished.length < MAX_UNRECORDED
        ) {
          this.claimsDue = false;
          const claimed = await this.claim(free);
          for (const delivery of claimed) this.begin(delivery);
          // A full batch: more may be due.
          this.claimsDue ||= claimed.length === free;
          busy ||= this.claimsDue;
        }
        this.failures = 0;
      } catch (error) {
        // The database unreachable or locked: the next round waits longer each time (up to 30 s), so an outage is not a busy loop.
        this.failures++;
        this.log.warn(
          { err: error instanceof Error ? error.message : String(error), failures: this.failures },
          'webhook delivery loop failed; retrying',
        );
      }
      if (!busy && this.running)
        await this.idle(
          this.failures === 0 ? IDLE_POLL_MS : Math.min(30_000, IDLE_POLL_MS * 2 ** Math.min(this.failures, 8)),
        );
    }
  }

  /** Until woken (a commit in this process, a finished attempt) or `ms` (the poll interval) passes. */
  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.outboxDirty = true;
        this.claimsDue = true;
        this.wake?.();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private async claim(limit: number): Promise<Claimed[]> {
    const now = nowIso();
    const leaseUntil = new Date(Date.now() + this.settings.timeoutMs + LEASE_MARGIN_MS).toISOString();
    return this.database.db.transaction().execute(async (trx) => {
      const candidates = await trx
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .select([
          'd.id',
          'd.endpoint_id',
          'd.message_id',
          'd.body',
          'd.next_step',
          'd.updated_at',
          'e.url',
          'e.secret',
          'e.previous_secret',
          'e.previous_secret_until',
          'e.retry_config',
        ])
        .where('d.status', '=', 'pending')
        .where('e.status', '=', 'enabled')
        .where('d.next_attempt_at', '<=', now)
        .where((eb) => eb.or([eb('d.lease_until', 'is', null), eb('d.lease_until', '<', now)]))
        .orderBy('d.next_attempt_at')
        .orderBy('d.id')
        .limit(limit * 4)
        .$if(this.database.dialect === 'postgres', (qb) => qb.modifyEnd(sql`for update of d skip locked`))
        .execute();
      const taken: Claimed[] = [];
      const counts = new Map(this.perEndpoint);
      for (const c of candidates) {
        if (taken.length >= limit) break;
        const n = counts.get(c.endpoint_id) ?? 0;
        if (n >= PER_ENDPOINT) continue;
        counts.set(c.endpoint_id, n + 1);
        taken.push({ ...c, lease_until: leaseUntil });
      }
      if (taken.length > 0) {
        await trx
          .updateTable('webhook_deliveries')
          .set({ lease_until: leaseUntil })
          .where(
            'id',
            'in',
            taken.map((c) => c.id),
          )
          .execute();
      }
      return taken;
    });
  }

  private begin(delivery: Claimed): void {
    this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    const work = this.deliver(delivery)
      .catch((error: unknown) =>
        this.log.warn(
          { delivery: delivery.id, err: error instanceof Error ? error.message : String(error) },
          'webhook attempt failed',
        ),
      )
      .finally(() => {
        this.inFlight.delete(delivery.id);
        const n = (this.perEndpoint.get(delivery.endpoint_id) ?? 1) - 1;
        if (n === 0) this.perEndpoint.delete(delivery.endpoint_id);
        else this.perEndpoint.set(delivery.endpoint_id, n);
        this.claimsDue = true;
        this.wake?.();
      });
    this.inFlight.set(delivery.id, work);
  }

  private open(sealed: string): string {
    let secret = this.secrets.get(sealed);
    if (secret === undefined) {
      secret = openSecret(this.settings, sealed);
      this.secrets.set(sealed, secret);
    }
    return secret;
  }

  private async deliver(delivery: Claimed): Promise<void> {
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = [this.open(delivery.secret)];
    if (
      delivery.previous_secret &&
      delivery.previous_secret_until &&
      Date.parse(delivery.previous_secret_until) > Date.now()
    ) {
      secrets.push(this.open(delivery.previous_secret));
    }
    const headers = {
      'webhook-id': delivery.message_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': secrets.map((s) => sign(s, delivery.message_id, timestamp, delivery.body)).join(' '),
      'user-agent': 'Engram-Webhooks/1',
    };
    const outcome = await attempt(this.settings, delivery.url, headers, delivery.body);
    this.finished.push({ delivery, outcome, at: nowIso() });
    this.startRecording();
  }

  private startRecording(): void {
    this.recording ??= this.record().finally(() => {
      this.recording = null;
      // Finished after the last round looked.
      if (this.finished.length > 0) this.startRecording();
    });
  }

  /** Records the finished attempts, those finished meanwhile in one transaction per round, until none is left. */
  private async record(): Promise<void> {
    while (this.finished.length > 0) {
      const batch = this.finished.splice(0, RECORD_BATCH);
      try {
        await recordAttempts(this.database, batch);
      } catch (error) {
        this.log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'webhook attempts not recorded; their leases will expire and they will be retried',
        );
      }
      // Claims that waited for outcomes to be written may go on.
      this.claimsDue = true;
      this.wake?.();
    }
  }
}

const STEP_COLUMNS = [
  ['id', 'bigint'],
  ['lease_until', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['status', 'text'],
  ['next_step', 'integer'],
  ['next_attempt_at', 'timestamptz'],
  ['at', 'timestamptz'],
] as const;
const HEALTH_COLUMNS = [
  ['id', 'bigint'],
  ['failing_since', 'timestamptz'],
  ['consecutive_failures', 'integer'],
  ['last_success_at', 'timestamptz'],
  ['last_failure_at', 'timestamptz'],
] as const;

/**
 * Records attempts and moves each delivery on: succeeded, the next step of its endpoint's
 * schedule, or exhausted; then each endpoint's health. An endpoint failing every attempt for its
 * disable period is disabled, with an audit row and an endpoint.disabled event.
 */
async function recordAttempts(database: Database, batch: Finished[]): Promise<void> {
  // Deliveries in id order (the attempts' foreign keys lock them too), then their endpoints, like the erase hook and an
  // endpoint's deletion, so two transactions never wait on each other's rows (PostgreSQL deadlocks).
  const sorted = [...batch].sort((a, b) => a.delivery.id - b.delivery.id);
  const toDisable = await database.db.transaction().execute(async (trx) => {
    // An attempt whose delivery went meanwhile (its endpoint deleted) is not recorded; one such attempt failing the
    // batch's foreign keys would leave every other delivery of the batch to be attempted again.
    const present = new Set(
      (
        await trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where(
            'id',
            'in',
            sorted.map((b) => b.delivery.id),
          )
          .orderBy('id')
          .$if(database.dialect === 'postgres', (qb) => qb.forNoKeyUpdate())
          .execute()
      ).map((r) => r.id),
    );
    const ordered = sorted.filter((b) => present.has(b.delivery.id));
    if (ordered.length === 0) return [];
    await trx
      .insertInto('webhook_attempts')
      .values(
        ordered.map(({ delivery, outcome, at }) => ({
          delivery_id: delivery.id,
          endpoint_id: delivery.endpoint_id,
          attempted_at: at,
          status_code: outcome.statusCode,
          latency_ms: outcome.latencyMs,
          response_body: outcome.body,
          error: outcome.error,
          succeeded: database.bool(outcome.error === null),
        })),
      )
      .execute();
    // Every delivery moved on in one statement. Its next step applies only while it holds the lease it was claimed
    // with and was not queued again meanwhile (`current`): an operator's retry wins (pending, due when they asked),
    // and after a lapsed lease the process that took it over decides; then this attempt only counts, and gives the
    // lease up if it is still this one.
    const steps = ordered.map(({ delivery, outcome, at }) => {
      const schedule = decodeJson<{ schedule_seconds: number[] }>(delivery.retry_config).schedule_seconds;
      const succeeded = outcome.error === null;
      const nextStep = delivery.next_step + 1;
      const exhausted = !succeeded && nextStep >= schedule.length;
      return {
        id: delivery.id,
        lease_until: delivery.lease_until,
        updated_at: delivery.updated_at,
        status: succeeded ? 'succeeded' : exhausted ? 'exhausted' : 'pending',
        next_step: succeeded || exhausted ? delivery.next_step : nextStep,
        next_attempt_at:
          succeeded || exhausted ? null : new Date(Date.parse(at) + schedule[nextStep]! * 1000).toISOString(),
        at,
      };
    });
    const current = sql.raw('(d.lease_until = s.lease_until AND d.updated_at = s.updated_at)');
    await sql`UPDATE webhook_deliveries AS d SET
        status = CASE WHEN ${current} THEN s.status ELSE d.status END,
        attempts = d.attempts + 1,
        next_step = CASE WHEN ${current} THEN s.next_step ELSE d.next_step END,
        next_attempt_at = CASE WHEN ${current} THEN s.next_attempt_at ELSE d.next_attempt_at END,
        lease_until = CASE WHEN d.lease_until = s.lease_until THEN NULL ELSE d.lease_until END,
        updated_at = CASE WHEN ${current} THEN s.at ELSE d.updated_at END
      FROM ${jsonRows(database.dialect, 's', STEP_COLUMNS, steps)}
      WHERE d.id = s.id`.execute(trx);
    const endpointIds = [...new Set(ordered.map((b) => b.delivery.endpoint_id))];
    // Locked as read: another worker's batch, or an operator's change, landing between this read and the
    // update below would otherwise be overwritten with what this transaction saw (PostgreSQL; SQLite has one writer).
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select([
        'id',
        'failing_since',
        'consecutive_failures',
        'status',
        'retry_config',
        'last_success_at',
        'last_failure_at',
      ])
      .where('id', 'in', endpointIds)
      .orderBy('id')
      .$if(database.dialect === 'postgres', (qb) => qb.forUpdate())
      .execute();
    const disable: Array<{ id: number; failingSince: string }> = [];
    const health = endpoints.map((e) => {
      let {
        failing_since: failingSince,
        consecutive_failures: failures,
        last_success_at: lastSuccess,
        last_failure_at: lastFailure,
      } = e;
      for (const { delivery, outcome, at } of ordered) {
        if (delivery.endpoint_id !== e.id) continue;
        if (outcome.error === null) [failingSince, failures, lastSuccess] = [null, 0, at];
        else [failingSince, failures, lastFailure] = [failingSince ?? at, failures + 1, at];
      }
      const disableAfterMs = retryConfigOf(e).disable_after_seconds * 1000;
      if (
        e.status === 'enabled' &&
        failingSince !== null &&
        lastFailure !== null &&
        Date.parse(lastFailure) - Date.parse(failingSince) >= disableAfterMs
      )
        disable.push({ id: e.id, failingSince });
      return {
        id: e.id,
        failing_since: failingSince,
        consecutive_failures: failures,
        last_success_at: lastSuccess,
        last_failure_at: lastFailure,
      };
    });
    if (health.length > 0)
      await sql`UPDATE webhook_endpoints AS e SET failing_since = h.failing_since,
          consecutive_failures = h.consecutive_failures, last_success_at = h.last_success_at,
          last_failure_at = h.last_failure_at
        FROM ${jsonRows(database.dialect, 'h', HEALTH_COLUMNS, health)}
        WHERE e.id = h.id`.execute(trx);
    return disable;
  });
  for (const { id, failingSince } of toDisable) await disableEndpoint(database, id, failingSince);
}

/** Disables an endpoint still enabled and failing since `failingSince`: a resume (or a success) committed meanwhile ended that streak. */
async function disableEndpoint(database: Database, id: number, failingSince: string): Promise<void> {
  const endpoint = await database.db
    .selectFrom('webhook_endpoints')
    .select(['organization_id', 'project_id', 'url'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!endpoint) return;
  const ctx = {
    actor: SYSTEM_ACTOR,
    organizationId: endpoint.organization_id,
    projectId: endpoint.project_id,
    requestId: null,
  };
  await write(database, ctx, async (trx, effects) => {
    const changed = await trx
      .updateTable('webhook_endpoints')
      .set({
        status: 'disabled',
        disabled_reason: `every attempt failed since ${failingSince}`,
        updated_at: effects.now,
      })
      .where('id', '=', id)
      .where('status', '=', 'enabled')
      .where('failing_since', '=', failingSince)
      .executeTakeFirst();
    if (Number(changed.numUpdatedRows) === 0) return;
    await subscribeEndpoint(trx, id, null);
    effects.audit('webhook.disable', { type: 'webhook_endpoint', id });
    effects.emit('endpoint.disabled', {
      endpoint_id: id,
      url: endpoint.url,
      failing_since: failingSince,
      reason: 'every attempt failed for the disable period',
    });
  });
}
