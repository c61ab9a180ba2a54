import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { startWorkerProcess, type BackgroundProcess } from '../../testing/process.js';
import { Receiver } from '../../testing/receiver.js';
import { until } from '../../testing/until.js';

const SECRET = 'webhook-kill-test-secret-0123456789abcdefghij';
const EVENTS = 150;

forEachDialect('webhook delivery across worker processes', (dialect) => {
  // Delivery runs only in `engram worker` child processes here, never in the test process.
  const t = useTestApp(dialect, {
    runJobs: false,
    secretKey: SECRET,
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);
  const receiver = new Receiver();
  const workers: BackgroundProcess[] = [];
  beforeAll(() => receiver.start());
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await receiver.stop();
  });
  const worker = () => {
    const w = startWorkerProcess({
      ENGRAM_DATABASE_URL: t.databaseUrl,
      ENGRAM_SECRET_KEY: SECRET,
      ENGRAM_LOG_LEVEL: 'warn',
      ENGRAM_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      ENGRAM_WEBHOOK_ALLOW_HTTP: 'true',
      ENGRAM_WEBHOOK_TIMEOUT_SECONDS: '2',
    });
    workers.push(w);
    return w;
  };

  it('two workers share deliveries without attempting one twice at once; a kill -9 mid-delivery loses nothing', async () => {
    receiver.set('/slow', 'slow');
    const created = await t.call('POST', '/org/webhooks', {
      token: owner.token,
      headers: { 'x-project-id': t.projectId },
      body: {
        name: 'slow',
        url: `${receiver.url}/slow`,
        events: ['memory.created'],
        retry_config: { schedule_seconds: [0, 1, 1, 1] },
      },
    });
    expect(created.status).toBe(201);
    receiver.verifyWith('/slow', created.body.secret);
    for (let i = 0; i < EVENTS / 50; i++) {
      const items = Array.from({ length: 50 }, (_, j) => ({ text: `Kill test memory ${i * 50 + j}` }));
      expect((await t.call('POST', '/memory/bulk-add', { body: { items } })).status).toBe(200);
    }
    const victim = worker();
    worker();
    await until(() => receiver.at('/slow').length >= 20, 'deliveries under way', 60_000);
    expect(await victim.stop('SIGKILL')).toBe(null);
    const ids = await until(
      () => {
        const seen = new Set(receiver.at('/slow').map((r) => r.headers['webhook-id']));
        return seen.size === EVENTS && seen;
      },
      'every event after the kill',
      90_000,
    );
    expect(ids.size).toBe(EVENTS);
    expect(receiver.at('/slow').every((r) => r.verified)).toBe(true);
    expect(receiver.overlaps).toBe(0);
    const duplicates = receiver.at('/slow').length - EVENTS;
    // At most the deliveries the killed worker had in flight arrive twice.
    expect(duplicates).toBeLessThanOrEqual(8);
    console.log(JSON.stringify({ dialect, events: EVENTS, duplicates_after_kill: duplicates }));
  });
});
