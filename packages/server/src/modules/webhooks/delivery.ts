import type { BaseLogger } from 'pino';
import { dispatchOutbox, onEventsCommitted, type OutboxDispatcher } from '../../core/events.js';
import { nowIso, type Database } from '../../store/database.js';
import { attempt, CONCURRENCY, sign } from './attempt.js';
import { claimDeliveries } from './claim.js';
import { onDeliveriesDue } from './due.js';
import { openSecret, type WebhookSettings } from './endpoints.js';
import { type Claimed, type Finished, recordAttempts } from './record.js';

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

  private claim(limit: number): Promise<Claimed[]> {
    const leaseUntil = new Date(Date.now() + this.settings.timeoutMs + LEASE_MARGIN_MS).toISOString();
    return claimDeliveries(this.database, limit, this.perEndpoint, nowIso(), leaseUntil);
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
