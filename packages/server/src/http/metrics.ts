import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from '@sinclair/typebox';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { outboxBacklog } from '../core/events.js';
import { unauthenticated } from '../core/errors.js';
import { jobCounts } from '../jobs/runner.js';
import type { Database } from '../store/database.js';

/**
 * Prometheus metrics at GET /metrics, for this process (each HTTP process of a cluster answers for
 * itself; database-wide figures are the same from any). Served only when ENGRAM_METRICS_TOKEN is
 * set, and only to `Authorization: Bearer <token>`: it tells who calls what, so it is not public.
 */

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface MetricsSources {
  database: Database;
  indexCache: () => Promise<{
    entries: number;
    bytes: number;
    hits: number;
    misses: number;
    snapshots: { loaded: number; stored: number; failed: number };
  }>;
  /** Bytes the intelligence cache counts (modules/intelligence: ENGRAM_INTELLIGENCE_CACHE_MB). */
  intelligenceCacheBytes: () => number;
  /** Memories a configured chat model read for their personal facts, and its failed calls (modules/intelligence). */
  modelReadings: () => { read: number; failures: number };
  /** Webhook endpoints by state and the pending deliveries (modules/webhooks). */
  webhookBacklog: () => Promise<{ endpoints: Record<string, number>; pending: number; oldestPending: string | null }>;
}

function tokenMatches(presented: string | undefined, token: string): boolean {
  const match = presented === undefined ? undefined : /^Bearer (.+)$/i.exec(presented)?.[1];
  if (match === undefined) return false;
  const a = Buffer.from(match);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The app's metrics, in a registry of its own (several apps share a test process). Figures read from the
 * database or the index cache at scrape time are set on each scrape (`refresh`); totals kept elsewhere
 * (cache lookups, snapshots) are counters set to that total.
 */
function engramMetrics(sources: MetricsSources) {
  const registry = new Registry();
  // process_* (CPU, memory, open files), nodejs_eventloop_lag_*, nodejs_gc_duration_seconds, heap and handles.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const requests = new Counter({
    name: 'engram_http_requests_total',
    help: 'Requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    registers,
  });
  const duration = new Histogram({
    name: 'engram_http_request_duration_seconds',
    help: 'Time to answer a request, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers,
  });
  const pool = new Gauge({
    name: 'engram_db_pool_connections',
    help: 'PostgreSQL pool connections by state (absent on SQLite: one connection, no pool).',
    labelNames: ['state'],
    registers,
  });
  const cacheBytes = new Gauge({
    name: 'engram_index_cache_bytes',
    help: 'Memory held by in-process retrieval indexes, counted by what their structures hold (ENGRAM_INDEX_CACHE_MB).',
    registers,
  });
  const intelligenceBytes = new Gauge({
    name: 'engram_intelligence_cache_bytes',
    help: "Memory held by end users' extractions and derived knowledge, counted like the index cache (ENGRAM_INTELLIGENCE_CACHE_MB).",
    registers,
  });
  const cacheEntries = new Gauge({
    name: 'engram_index_cache_entries',
    help: 'Retrieval indexes held in this process.',
    registers,
  });
  const lookups = new Counter({
    name: 'engram_index_cache_lookups_total',
    help: 'Index lookups: hit (current index used as is) or miss (loaded or brought up to date).',
    labelNames: ['result'],
    registers,
  });
  const snapshots = new Counter({
    name: 'engram_index_snapshots_total',
    help: 'Stored indexes of large end users: loaded instead of built, stored, or failed to store.',
    labelNames: ['event'],
    registers,
  });
  const modelReadings = new Counter({
    name: 'engram_model_fact_readings_total',
    help: 'Memories the chat model read for personal facts (read), and failed calls (failed; tried again later).',
    labelNames: ['outcome'],
    registers,
  });
  const jobs = new Gauge({ name: 'engram_jobs', help: 'Background jobs by state.', labelNames: ['state'], registers });
  const outboxPending = new Gauge({
    name: 'engram_outbox_pending_events',
    help: 'Outbox events not yet dispatched.',
    registers,
  });
  const outboxAge = new Gauge({
    name: 'engram_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest undispatched outbox event (0 when none).',
    registers,
  });
  const endpoints = new Gauge({
    name: 'engram_webhook_endpoints',
    help: 'Webhook endpoints by state (enabled, paused, disabled).',
    labelNames: ['state'],
    registers,
  });
  const deliveries = new Gauge({
    name: 'engram_webhook_pending_deliveries',
    help: 'Webhook deliveries not yet made (first attempt or a retry due).',
    registers,
  });
  const deliveryAge = new Gauge({
    name: 'engram_webhook_oldest_pending_delivery_age_seconds',
    help: 'Age of the oldest pending webhook delivery (0 when none).',
    registers,
  });
  const setTotals = (counter: Counter<string>, label: string, totals: Record<string, number>) => {
    counter.reset();
    for (const [value, n] of Object.entries(totals)) counter.inc({ [label]: value }, n);
  };
  const setByState = (gauge: Gauge<string>, totals: Record<string, number>) => {
    for (const [state, n] of Object.entries(totals)) gauge.set({ state }, n);
  };
  const ageOf = (oldest: string | null) => (oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0);

  return {
    registry,
    observe(method: string, route: string, status: number, seconds: number) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    },
    async refresh() {
      const [jobCount, outbox, webhooks, cache] = await Promise.all([
        jobCounts(sources.database.db),
        outboxBacklog(sources.database.db),
        sources.webhookBacklog(),
        sources.indexCache(),
      ]);
      const connections = sources.database.pool();
      if (connections)
        setByState(pool, {
          total: connections.total,
          idle: connections.idle,
          waiting: connections.waiting,
          max: connections.max,
        });
      cacheBytes.set(cache.bytes);
      cacheEntries.set(cache.entries);
      intelligenceBytes.set(sources.intelligenceCacheBytes());
      setTotals(lookups, 'result', { hit: cache.hits, miss: cache.misses });
      setTotals(snapshots, 'event', cache.snapshots);
      const readings = sources.modelReadings();
      setTotals(modelReadings, 'outcome', { read: readings.read, failed: readings.failures });
      jobs.reset();
      setByState(jobs, jobCount);
      outboxPending.set(outbox.pending);
      outboxAge.set(ageOf(outbox.oldest));
      endpoints.reset();
      setByState(endpoints, webhooks.endpoints);
      deliveries.set(webhooks.pending);
      deliveryAge.set(ageOf(webhooks.oldestPending));
    },
  };
}

export const metrics = fp(async (app: FastifyInstance, opts: MetricsSources & { token?: string }) => {
  if (!opts.token) return;
  const token = opts.token;
  const collected = engramMetrics(opts);
  app.addHook('onResponse', async (request, reply) => {
    collected.observe(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
  });
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['health'],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text format. Served only when ENGRAM_METRICS_TOKEN is set, to `Authorization: Bearer <ENGRAM_METRICS_TOKEN>` (401 otherwise).',
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      const authorization = request.headers.authorization;
      if (!tokenMatches(typeof authorization === 'string' ? authorization : undefined, token)) {
        throw unauthenticated('GET /metrics needs Authorization: Bearer <ENGRAM_METRICS_TOKEN>');
      }
      await collected.refresh();
      return reply.type(collected.registry.contentType).send(await collected.registry.metrics());
    },
  );
});
