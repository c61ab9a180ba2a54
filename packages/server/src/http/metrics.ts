import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from '@sinclair/typebox';
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

interface Series {
  labels: string;
  count: number;
  sum: number;
  buckets: number[];
}

export interface MetricsSources {
  database: Database;
  indexCache: () => Promise<{ entries: number; bytes: number; hits: number; misses: number; snapshots: { loaded: number; stored: number; failed: number } }>;
  /** Webhook endpoints by state and the pending deliveries (modules/webhooks). */
  webhookBacklog: () => Promise<{ endpoints: Record<string, number>; pending: number; oldestPending: string | null }>;
}

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string, lines: string[]): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${lines.join('\n')}${lines.length ? '\n' : ''}`;
}

function tokenMatches(presented: string | undefined, token: string): boolean {
  const match = presented === undefined ? undefined : /^Bearer (.+)$/i.exec(presented)?.[1];
  if (match === undefined) return false;
  const a = Buffer.from(match);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const metrics = fp(async (app: FastifyInstance, opts: MetricsSources & { token?: string }) => {
  const requests = new Map<string, Series>();

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = `method="${escape(request.method)}",route="${escape(route)}",status="${reply.statusCode}"`;
    let series = requests.get(labels);
    if (!series) requests.set(labels, (series = { labels, count: 0, sum: 0, buckets: BUCKETS.map(() => 0) }));
    const seconds = reply.elapsedTime / 1000;
    series.count++;
    series.sum += seconds;
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) series.buckets[i]!++;
    });
  });

  if (!opts.token) return;
  const token = opts.token;
  app.get('/metrics', {
    schema: {
      tags: ['health'], summary: 'Prometheus metrics',
      description: 'Prometheus text format. Served only when ENGRAM_METRICS_TOKEN is set, to `Authorization: Bearer <ENGRAM_METRICS_TOKEN>` (401 otherwise).',
      response: { 200: Type.String() },
    },
  }, async (request, reply) => {
    const authorization = request.headers.authorization;
    if (!tokenMatches(typeof authorization === 'string' ? authorization : undefined, token)) {
      throw unauthenticated('GET /metrics needs Authorization: Bearer <ENGRAM_METRICS_TOKEN>');
    }
    const [jobs, outbox, webhooks] = await Promise.all([jobCounts(opts.database.db), outboxBacklog(opts.database.db), opts.webhookBacklog()]);
    const ageOf = (oldest: string | null) => (oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0);
    const pool = opts.database.pool();
    const cache = await opts.indexCache();
    const all = [...requests.values()];
    const text = [
      family('engram_http_requests_total', 'counter', 'Requests answered, by method, route pattern and status.',
        all.map((s) => `engram_http_requests_total{${s.labels}} ${s.count}`)),
      family('engram_http_request_duration_seconds', 'histogram', 'Time to answer a request, by method, route pattern and status.',
        all.flatMap((s) => [
          ...BUCKETS.map((le, i) => `engram_http_request_duration_seconds_bucket{${s.labels},le="${le}"} ${s.buckets[i]}`),
          `engram_http_request_duration_seconds_bucket{${s.labels},le="+Inf"} ${s.count}`,
          `engram_http_request_duration_seconds_sum{${s.labels}} ${s.sum}`,
          `engram_http_request_duration_seconds_count{${s.labels}} ${s.count}`,
        ])),
      family('engram_db_pool_connections', 'gauge', 'PostgreSQL pool connections by state (absent on SQLite: one connection, no pool).',
        pool ? [`engram_db_pool_connections{state="total"} ${pool.total}`, `engram_db_pool_connections{state="idle"} ${pool.idle}`,
          `engram_db_pool_connections{state="waiting"} ${pool.waiting}`, `engram_db_pool_connections{state="max"} ${pool.max}`] : []),
      family('engram_index_cache_bytes', 'gauge', 'Estimated memory held by in-process retrieval indexes.', [`engram_index_cache_bytes ${cache.bytes}`]),
      family('engram_index_cache_entries', 'gauge', 'Retrieval indexes held in this process.', [`engram_index_cache_entries ${cache.entries}`]),
      family('engram_index_cache_lookups_total', 'counter', 'Index lookups: hit (current index used as is) or miss (loaded or brought up to date).',
        [`engram_index_cache_lookups_total{result="hit"} ${cache.hits}`, `engram_index_cache_lookups_total{result="miss"} ${cache.misses}`]),
      family('engram_index_snapshots_total', 'counter', 'Stored indexes of large end users: loaded instead of built, stored, or failed to store.',
        Object.entries(cache.snapshots).map(([event, n]) => `engram_index_snapshots_total{event="${event}"} ${n}`)),
      family('engram_jobs', 'gauge', 'Background jobs by state.', Object.entries(jobs).map(([state, n]) => `engram_jobs{state="${state}"} ${n}`)),
      family('engram_outbox_pending_events', 'gauge', 'Outbox events not yet dispatched.', [`engram_outbox_pending_events ${outbox.pending}`]),
      family('engram_outbox_oldest_pending_age_seconds', 'gauge', 'Age of the oldest undispatched outbox event (0 when none).',
        [`engram_outbox_oldest_pending_age_seconds ${ageOf(outbox.oldest)}`]),
      family('engram_webhook_endpoints', 'gauge', 'Webhook endpoints by state (enabled, paused, disabled).',
        Object.entries(webhooks.endpoints).map(([state, n]) => `engram_webhook_endpoints{state="${state}"} ${n}`)),
      family('engram_webhook_pending_deliveries', 'gauge', 'Webhook deliveries not yet made (first attempt or a retry due).',
        [`engram_webhook_pending_deliveries ${webhooks.pending}`]),
      family('engram_webhook_oldest_pending_delivery_age_seconds', 'gauge', 'Age of the oldest pending webhook delivery (0 when none).',
        [`engram_webhook_oldest_pending_delivery_age_seconds ${ageOf(webhooks.oldestPending)}`]),
    ].join('');
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(text);
  });
});
