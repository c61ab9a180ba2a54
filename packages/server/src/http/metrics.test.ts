import { describe, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';

const TOKEN = 'metrics-token-0123456789';

/** The value of one sample line of a Prometheus text answer. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

forEachDialect('GET /metrics', (dialect) => {
  const t = useTestApp(dialect, {
    metricsToken: TOKEN,
    runJobs: false,
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);
  const scrape = () =>
    t.call('GET', '/metrics', {
      key: null,
      project: null,
      endUser: null,
      headers: { authorization: `Bearer ${TOKEN}` },
    });

  it('answers only to the metrics token', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Basic ${TOKEN}`]) {
      const res = await t.call('GET', '/metrics', {
        key: null,
        project: null,
        endUser: null,
        headers: { authorization },
      });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthenticated');
    }
    expect((await scrape()).status).toBe(200);
  });

  it('counts requests by route and status with a latency histogram, and reports cache, jobs, outbox and pool', async () => {
    for (let i = 0; i < 3; i++)
      expect((await t.call('POST', '/memory/add', { body: { text: `metric fact ${i}` } })).status).toBe(201);
    expect((await t.call('POST', '/memory/add', { body: { text: '' } })).status).toBe(400);
    for (let i = 0; i < 2; i++)
      expect((await t.call('POST', '/memory/query', { body: { query: 'metric fact' } })).status).toBe(200);
    await t.call('POST', '/memory/refresh', {});

    const res = await scrape();
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    const labels = 'method="POST",route="/memory/add",status="201"';
    expect(sample(text, `engram_http_requests_total{${labels}}`)).toBe(3);
    expect(sample(text, 'engram_http_requests_total{method="POST",route="/memory/add",status="400"}')).toBe(1);
    expect(sample(text, `engram_http_request_duration_seconds_count{${labels}}`)).toBe(3);
    // prom-client writes a bucket's le first (label order means nothing to Prometheus).
    expect(sample(text, `engram_http_request_duration_seconds_bucket{le="+Inf",${labels}}`)).toBe(3);
    expect(sample(text, `engram_http_request_duration_seconds_sum{${labels}}`)).toBeGreaterThan(0);
    // The first query loads the index (a miss), the second finds it current (a hit).
    expect(sample(text, 'engram_index_cache_lookups_total{result="miss"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'engram_index_cache_lookups_total{result="hit"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'engram_index_cache_bytes')).toBeGreaterThan(0);
    // The queries read the current fact: the end user's extractions are held and counted.
    expect(sample(text, 'engram_intelligence_cache_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'engram_jobs{state="queued"}')).toBe(1);
    expect(sample(text, 'engram_outbox_pending_events')).toBe(3);
    expect(sample(text, 'engram_outbox_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
    if (dialect === 'postgres') expect(sample(text, 'engram_db_pool_connections{state="max"}')).toBe(5);
    else expect(text).not.toContain('engram_db_pool_connections{');
    expect(text).not.toContain(t.key);
  });

  it('counts no index lookup for a forget brought into a held index', async () => {
    const added = await t.call('POST', '/memory/add', { endUser: 'forgetful', body: { text: 'a lookup fact' } });
    expect(added.status).toBe(201);
    expect((await t.call('POST', '/memory/query', { endUser: 'forgetful', body: { query: 'lookup' } })).status).toBe(
      200,
    );
    const lookups = async () => {
      const text = (await scrape()).text;
      return ['hit', 'miss'].map((result) => sample(text, `engram_index_cache_lookups_total{result="${result}"}`));
    };
    const before = await lookups();
    const forgot = await t.call('DELETE', '/memory/forget', { endUser: 'forgetful', body: { ids: [added.body.id] } });
    expect(forgot.status, forgot.text).toBeLessThan(300);
    expect(await lookups()).toEqual(before);
    // The forget was applied to the held index: the next query finds it current.
    expect((await t.call('POST', '/memory/query', { endUser: 'forgetful', body: { query: 'lookup' } })).status).toBe(
      200,
    );
    expect(await lookups()).toEqual([before[0]! + 1, before[1]]);
  });

  it('keeps every metric name and type, and adds the process, GC and event-loop metrics', async () => {
    const text = (await scrape()).text;
    const types = Object.fromEntries([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    expect(types).toMatchObject({
      engram_http_requests_total: 'counter',
      engram_http_request_duration_seconds: 'histogram',
      engram_db_pool_connections: 'gauge',
      engram_index_cache_bytes: 'gauge',
      engram_index_cache_entries: 'gauge',
      engram_intelligence_cache_bytes: 'gauge',
      engram_index_cache_lookups_total: 'counter',
      engram_index_snapshots_total: 'counter',
      engram_jobs: 'gauge',
      engram_outbox_pending_events: 'gauge',
      engram_outbox_oldest_pending_age_seconds: 'gauge',
      engram_webhook_endpoints: 'gauge',
      engram_webhook_pending_deliveries: 'gauge',
      engram_webhook_oldest_pending_delivery_age_seconds: 'gauge',
      process_cpu_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_eventloop_lag_p99_seconds: 'gauge',
      nodejs_gc_duration_seconds: 'histogram',
      nodejs_heap_size_used_bytes: 'gauge',
    });
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'engram_index_snapshots_total{event="loaded"}')).toBe(0);
  });

  it("reports webhook endpoints by state and the pending deliveries with the oldest one's age", async () => {
    const before = await scrape();
    expect(sample(before.text, 'engram_webhook_pending_deliveries')).toBe(0);
    expect(sample(before.text, 'engram_webhook_oldest_pending_delivery_age_seconds')).toBe(0);
    const as = { token: owner.token, headers: { 'x-project-id': t.projectId } };
    const endpoints = [];
    for (const name of ['down', 'paused']) {
      const res = await t.call('POST', '/org/webhooks', {
        ...as,
        body: { name, url: 'http://127.0.0.1:9/hook', events: ['memory.created'] },
      });
      expect(res.status, res.text).toBe(201);
      endpoints.push(res.body.id as number);
    }
    expect((await t.call('POST', `/org/webhooks/${endpoints[1]}/pause`, as)).status).toBe(200);
    // No process delivers here (runJobs: false): the test event waits.
    const test = await t.call('POST', `/org/webhooks/${endpoints[0]}/test`, as);
    expect(test.status).toBe(202);
    await t.database.db
      .updateTable('webhook_deliveries')
      .set({ created_at: new Date(Date.now() - 3_600_000).toISOString() })
      .where('id', '=', test.body.id)
      .execute();
    const text = (await scrape()).text;
    expect(sample(text, 'engram_webhook_endpoints{state="enabled"}')).toBe(1);
    expect(sample(text, 'engram_webhook_endpoints{state="paused"}')).toBe(1);
    expect(sample(text, 'engram_webhook_endpoints{state="disabled"}')).toBe(0);
    expect(sample(text, 'engram_webhook_pending_deliveries')).toBe(1);
    expect(sample(text, 'engram_webhook_oldest_pending_delivery_age_seconds')).toBeGreaterThanOrEqual(3_600);
  });

  it('logs one line per request', async () => {
    const before = t.logs.length;
    await t.call('GET', '/healthz', {
      key: null,
      project: null,
      endUser: null,
      headers: { 'x-request-id': 'one-line-check' },
    });
    const lines = t.logs
      .slice(before)
      .join('')
      .split('\n')
      .filter((l) => l.includes('one-line-check'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'request', method: 'GET', route: '/healthz', status: 200 });
  });
});

describe('GET /metrics without ENGRAM_METRICS_TOKEN', () => {
  const t = useTestApp('sqlite');
  it('is off (404)', async () => {
    expect((await t.call('GET', '/metrics', { key: null, project: null, endUser: null })).status).toBe(404);
  });
});
