import { loadConfig } from '../config.js';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app.js';
import { buildServices } from '../services.js';
import { startTestApp, type TestApp } from '../testing/harness.js';

const REDIS_URL = process.env.ENGRAM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a Redis answers at REDIS_URL (a TCP connect and PING); CI runs one, so there its absence fails. */
function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port || 6379), hostname);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(String(data).startsWith('+PONG')));
  });
}
const redisUp = await redisAnswers(REDIS_URL);
if (!redisUp && process.env.CI) throw new Error(`CI must run Redis for the shared rate-limit test (${REDIS_URL})`);

describe('rate limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { rateLimit: { max: 3, windowSeconds: 60, loginMax: 2 } });
  });
  afterAll(() => t.close());

  it('limits per IP and per route, with Retry-After and RateLimit-* headers', async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await t.call('GET', '/memory/export');
      expect(ok.status).toBe(200);
      expect(ok.headers['ratelimit-limit']).toBe('3');
      expect(ok.headers['ratelimit-remaining']).toBe(String(2 - i));
    }
    const limited = await t.call('GET', '/memory/export');
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: 'rate_limited', request_id: limited.headers['x-request-id'] });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    // Another route has its own allowance; another IP too.
    expect((await t.call('GET', '/healthz')).status).toBe(200);
    const elsewhere = await t.app.inject({
      method: 'GET',
      url: '/memory/export',
      remoteAddress: '10.9.8.7',
      headers: { 'x-api-key': t.key, 'x-project-id': t.projectId },
    });
    expect(elsewhere.statusCode).toBe(200);
  });

  it('counts requests before their credentials are checked, and limits sign-in more tightly', async () => {
    for (let i = 0; i < 3; i++)
      expect((await t.call('GET', '/org/projects', { key: null, token: 'guess' })).status).toBe(401);
    expect((await t.call('GET', '/org/projects', { key: null, token: 'guess' })).status).toBe(429);
    const login = () => t.call('POST', '/auth/login', { key: null, body: { email: t.email, password: t.password } });
    expect((await login()).status).toBe(200);
    expect((await login()).status).toBe(200);
    const third = await login();
    expect(third.status).toBe(429);
    expect(third.headers['ratelimit-limit']).toBe('2');
  });
});

(redisUp ? describe : describe.skip)(
  `rate limits shared through Redis${redisUp ? '' : ` [skipped: no Redis at ${REDIS_URL}; set ENGRAM_TEST_REDIS_URL]`}`,
  () => {
    it('counts requests of every process against one limit', async () => {
      const t = await startTestApp('sqlite');
      const config = {
        ...loadConfig({}),
        logLevel: 'silent',
        redisUrl: REDIS_URL,
        redisPrefix: `engram-test-${randomBytes(6).toString('hex')}:`,
        rateLimit: { max: 3, windowSeconds: 60, loginMax: 3 },
      };
      const build = () => buildApp({ services: buildServices({ config, database: t.database }) });
      const [a, b] = await Promise.all([build(), build()]);
      try {
        const get = (app: typeof a) => app.inject({ method: 'GET', url: '/healthz' });
        expect((await get(a)).statusCode).toBe(200);
        expect((await get(b)).statusCode).toBe(200);
        expect((await get(a)).statusCode).toBe(200);
        const limited = await get(b);
        expect(limited.statusCode).toBe(429);
        expect(limited.json().error.code).toBe('rate_limited');
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await t.close();
      }
    });
  },
);
