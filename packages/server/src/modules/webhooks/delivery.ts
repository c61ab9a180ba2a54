import type { BaseLogger } from 'pino';
import { dispatchOutbox, onEventsCommitted, type OutboxDispatcher } from '../../core/events.js';
import { nowIso, type Database } from '../../store/database.js';
import { everyProcessLeads, FOLLOWER_POLL_MS, type Leadership } from '../../store/leadership.js';
import { attempt, CONCURRENCY, sign } from './attempt.js';
import { claimDeliveries, releaseLeases } from './claim.js';
import { onDeliveriesDue } from './due.js';
import { openSecret, type WebhookSettings } from './endpoints.js';
import { type Claimed, type Finished, recordAttempts } from './record.js';

/**
 * At most this many deliveries of one endpoint attempted and not yet recorded (in flight, or answered and
 * not yet written) in one process, so a slow receiver cannot stall the others, and what a kill -9 of the
 * process sends again is at most this many per endpoint.
 */
const PER_ENDPOINT = 8;
/**
 * Deliveries claimed ahead of the free slots (at most as many again, and PER_ENDPOINT more per endpoint),
 * started as slots free up: attempts go on while the next claim is out, so a claim's round trip does not
 * leave slots idle. They are not attempted until started, so a crash does not send them again.
 */
const AHEAD = CONCURRENCY;
const CLAIM_BATCH = CONCURRENCY / 4;
/**
 * An attempt's slot is free once its answer is in, before its outcome is recorded (its lease keeps the
 * delivery from being claimed again meanwhile), so attempts go on while a batch is written; claims wait
 * while this many outcomes are still to be written (a slow database then slows delivery instead of
 * piling outcomes up). A batch is written in transactions of at most RECORD_BATCH.
 */
const MAX_UNRECORDED = CONCURRENCY * 4;
const RECORD_BATCH = 500;
/** Recording transactions under way at once, a second one only for at least this many outcomes. */
const RECORDINGS = 2;
const RECORD_TOGETHER = CLAIM_BATCH;
/**
 * How often an idle loop of the process leading the fleet (store/leadership.ts) looks for work committed by other
 * processes (FOLLOWER_POLL_MS in the others); commits in this process wake it at once.
 */
const IDLE_POLL_MS = 200;
/**
 * Outbox reads start at least this far apart: under a stream of writes each read takes the events
 * of many commits (one transaction for them all) instead of running once per commit beside them.
 */
const DISPATCH_GAP_MS = 10;
/**
 * A lease outlives the attempt deadline by this much, for recording the outcome; then a dead process's
 * deliveries are taken over. A claim's lease adds one more deadline, for the wait behind the slots.
 */
const LEASE_MARGIN_MS = 5000;
/**
 * A delivery claimed ahead starts only within this long of its claim's answer; one that waited longer is let go with
 * the rest of its endpoint's queue (order kept), its lease given up, and claimed again. Its body was read when it was
 * claimed, and a memory forgotten meanwhile has its stored deliveries rewritten (erase.ts): so claiming ahead adds at
 * most this long to what a forget may still see sent (the claim's own round trip, as when nothing was claimed ahead).
 * Counted from the answer, not from the lease (set before the claim was sent): a claim slower than this under load
 * would otherwise give up everything it claimed, every time, and nothing would be delivered.
 */
const MAX_QUEUED_MS = 1000;

/**
 * Background delivery: drains the outbox into delivery rows (fanOut, registered as a dispatcher)
 * and attempts due deliveries, each under a lease longer than the attempt deadline (rows claimed
 * with SKIP LOCKED on PostgreSQL), so several processes share the work and never attempt one
 * delivery twice at once; a process killed mid-attempt leaves a lease that simply expires.
 * The outbox and the claims are two loops of their own, so a claim never waits behind a fan-out.
 * Outcomes are recorded in batches (one transaction for every attempt finished meanwhile: the
 * attempts in one INSERT, the deliveries' next steps in one UPDATE, their endpoints' health in one),
 * while the next attempts go on: a slot is free once its answer is in.
 */
export class DeliveryLoop {
  private running = false;
  private loops: Array<Promise<void>> = [];
  private readonly outbox = new Wakeup();
  private readonly claims = new Wakeup();
  private unsubscribe: (() => void) | null = null;
  /** Claimed and not yet started, in the order they fell due. */
  private readonly queued: Queued[] = [];
  private readonly inFlight = new Map<number, Promise<void>>();
  private finished: Finished[] = [];
  /** Per endpoint: claimed and not yet recorded (queued, in flight or answered), what a claim counts as held. */
  private readonly held = new Map<number, number>();
  /** Per endpoint: attempted and not yet recorded (in flight or answered), what a crash would send again. */
  private readonly unrecorded = new Map<number, number>();
  private readonly recordings = new Set<Promise<void>>();
  private recordScheduled = false;
  private readonly secrets = new Map<string, string>();
  private lastDispatch = 0;

  constructor(
    private readonly database: Database,
    private readonly settings: WebhookSettings,
    private readonly dispatchers: readonly OutboxDispatcher[],
    private readonly log: Pick<BaseLogger, 'warn'>,
    private readonly leadership: Leadership = everyProcessLeads,
  ) {}

  start(): void {
    this.running = true;
    const stopEvents = onEventsCommitted(() => this.outbox.wake());
    const stopDue = onDeliveriesDue(() => this.claims.wake());
    // Come to lead (the last leader died): what the fleet left waiting is looked for now, not at the next slow poll.
    const stopLead = this.leadership.onLead(() => {
      this.outbox.wake();
      this.claims.wake();
    });
    this.unsubscribe = () => {
      stopEvents();
      stopDue();
      stopLead();
    };
    this.loops = [this.repeat(this.outbox, () => this.dispatch()), this.repeat(this.claims, () => this.claimAhead())];
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.outbox.wake();
    this.claims.wake();
    await Promise.all(this.loops);
    const unstarted = this.queued.splice(0).map((q) => q.delivery);
    for (const delivery of unstarted) count(this.held, delivery.endpoint_id, -1);
    await this.release(unstarted);
    await Promise.all(this.inFlight.values());
    while (this.finished.length > 0 || this.recordings.size > 0) {
      this.recordFinished();
      await Promise.all(this.recordings);
    }
  }

  /**
   * Runs `step` whenever `wakeup` is due (a wake-up, or the idle poll: work committed by other processes), at once
   * again while it finds more. A failed step (the database unreachable or locked) is tried again after a pause twice as
   * long each time (up to 30 s), so an outage is not a busy loop.
   */
  private async repeat(wakeup: Wakeup, step: () => Promise<boolean>): Promise<void> {
    let failures = 0;
    while (this.running) {
      if (wakeup.due) {
        wakeup.due = false;
        try {
          if (await step()) wakeup.due = true;
          failures = 0;
        } catch (error) {
          failures++;
          this.log.warn(
            { err: error instanceof Error ? error.message : String(error), failures },
            'webhook delivery loop failed; retrying',
          );
        }
      }
      if (this.running && !wakeup.due) {
        const poll = this.leadership.leads() ? IDLE_POLL_MS : FOLLOWER_POLL_MS;
        await wakeup.wait(failures === 0 ? poll : Math.min(30_000, IDLE_POLL_MS * 2 ** Math.min(failures, 8)));
      }
    }
  }

  /** Reads the outbox into delivery rows; true if it found events (more may be left), whose deliveries are then claimed. */
  private async dispatch(): Promise<boolean> {
    const wait = this.lastDispatch + DISPATCH_GAP_MS - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    this.lastDispatch = Date.now();
    if ((await dispatchOutbox(this.database, this.dispatchers)) === 0) return false;
    // Committed: the claim sees the rows made.
    this.claims.wake();
    return true;
  }

  /**
   * Claims as many as the slots and the queue have room for, in batches (a quarter of the slots at least, or whatever
   * is due when idle); true if the batch was full (more may be due).
   */
  private async claimAhead(): Promise<boolean> {
    const room = CONCURRENCY + AHEAD - this.inFlight.size - this.queued.length;
    const idle = this.inFlight.size === 0 && this.queued.length === 0;
    if ((room < CLAIM_BATCH && !idle) || this.finished.length >= MAX_UNRECORDED) return false;
    const leaseUntil = new Date(Date.now() + 2 * this.settings.timeoutMs + LEASE_MARGIN_MS).toISOString();
    const claimed = await claimDeliveries(this.database, room, 2 * PER_ENDPOINT, this.held, nowIso(), leaseUntil);
    const queuedAt = Date.now();
    for (const delivery of claimed) {
      count(this.held, delivery.endpoint_id, 1);
      this.queued.push({ delivery, queuedAt });
    }
    this.startQueued();
    return claimed.length === room;
  }

  /**
   * Starts queued deliveries in order while slots are free, passing over (with the rest of their queue) endpoints with
   * PER_ENDPOINT unrecorded; one claimed over MAX_QUEUED_MS ago is let go with the rest of its endpoint's queue.
   */
  private startQueued(): void {
    const queuedSince = Date.now() - MAX_QUEUED_MS;
    const passed = new Set<number>();
    const stale: Claimed[] = [];
    for (let i = 0; i < this.queued.length && this.inFlight.size < CONCURRENCY; ) {
      const { delivery, queuedAt } = this.queued[i]!;
      const endpoint = delivery.endpoint_id;
      if (passed.has(endpoint)) i++;
      else if (queuedAt < queuedSince) {
        passed.add(endpoint);
        for (let j = i; j < this.queued.length; )
          if (this.queued[j]!.delivery.endpoint_id === endpoint) stale.push(this.queued.splice(j, 1)[0]!.delivery);
          else j++;
      } else if ((this.unrecorded.get(endpoint) ?? 0) >= PER_ENDPOINT) {
        passed.add(endpoint);
        i++;
      } else {
        this.queued.splice(i, 1);
        this.begin(delivery);
      }
    }
    if (stale.length === 0) return;
    for (const delivery of stale) count(this.held, delivery.endpoint_id, -1);
    void this.release(stale).then(() => this.claims.wake());
  }

  /** Gives up the leases of deliveries claimed and not attempted, so that they are claimed again (in order) at once. */
  private async release(deliveries: Claimed[]): Promise<void> {
    try {
      await releaseLeases(this.database, deliveries);
    } catch (error) {
      this.log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'webhook leases not given up; they will lapse',
      );
    }
  }

  private begin(delivery: Claimed): void {
    count(this.unrecorded, delivery.endpoint_id, 1);
    const work = this.deliver(delivery)
      .catch((error: unknown) => {
        // Nothing to record: its lease lapses and it is attempted again.
        count(this.unrecorded, delivery.endpoint_id, -1);
        count(this.held, delivery.endpoint_id, -1);
        this.log.warn(
          { delivery: delivery.id, err: error instanceof Error ? error.message : String(error) },
          'webhook attempt failed',
        );
      })
      .finally(() => {
        this.inFlight.delete(delivery.id);
        if (this.running) this.startQueued();
        this.claims.wake();
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

  /** Records what finished a turn of the event loop later, so that the answers read in one turn go together. */
  private startRecording(): void {
    if (this.recordScheduled) return;
    this.recordScheduled = true;
    setImmediate(() => {
      this.recordScheduled = false;
      this.recordFinished();
    });
  }

  /**
   * Starts recording the finished attempts, in one transaction per batch: a second beside the one under way once
   * RECORD_TOGETHER are waiting (its endpoints' rows wait for the first's commit, its deliveries do not), so that
   * outcomes are written while the first batch's round trips are out. (On SQLite, one connection, they take turns.)
   */
  private recordFinished(): void {
    while (
      this.finished.length > 0 &&
      (this.recordings.size === 0 || (this.recordings.size < RECORDINGS && this.finished.length >= RECORD_TOGETHER))
    ) {
      const recording: Promise<void> = this.record(this.finished.splice(0, RECORD_BATCH)).finally(() => {
        this.recordings.delete(recording);
        this.recordFinished();
      });
      this.recordings.add(recording);
    }
  }

  private async record(batch: Finished[]): Promise<void> {
    try {
      await recordAttempts(this.database, batch);
    } catch (error) {
      this.log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'webhook attempts not recorded; their leases will expire and they will be retried',
      );
    }
    for (const { delivery } of batch) {
      count(this.unrecorded, delivery.endpoint_id, -1);
      count(this.held, delivery.endpoint_id, -1);
    }
    // Deliveries that waited for their endpoint's outcomes to be written, and claims that waited for room, may go on.
    if (this.running) this.startQueued();
    this.claims.wake();
  }
}

interface Queued {
  delivery: Claimed;
  /** When its claim answered (Date.now()). */
  queuedAt: number;
}

/** A loop's wake-up: `due` once woken (or the wait ran out), until the loop takes it. */
class Wakeup {
  due = true;
  private resolve: (() => void) | null = null;

  wake(): void {
    this.due = true;
    this.resolve?.();
  }

  /** Until woken or `ms` pass (then due too: the idle poll). */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.resolve = () => {
        clearTimeout(timer);
        this.resolve = null;
        resolve();
      };
    });
  }
}

/** Adds `by` to a per-endpoint count, dropping it at zero. */
function count(counts: Map<number, number>, endpoint: number, by: number): void {
  const n = (counts.get(endpoint) ?? 0) + by;
  if (n === 0) counts.delete(endpoint);
  else counts.set(endpoint, n);
}
