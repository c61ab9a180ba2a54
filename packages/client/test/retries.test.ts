import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../server/src/testing/harness.js';
import { ControlClient, EngramError, RateLimitError, ServiceClient, type Memory } from '../src/index.js';

/**
 * A proxy in front of a real app that answers the next requests with planned faults: 429 or 503
 * (the Error body, Retry-After: 0), a reset connection, no answer at all, or the app's answer
 * lost on the way back (the write happened; only the retry's idempotent replay can tell).
 */
type Fault =
  | '429'
  | '429-wait-20s'
  | '503'
  | '409-in-progress'
  | '409-conflict'
  | 'reset'
  | 'hang'
  | 'lose-answer'
  | 'pass';

interface Proxy {
  url: string;
  faults: Fault[];
  seen: Array<{ method: string; url: string; idempotencyKey: string | undefined }>;
  close(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const faults: Fault[] = [];
  const seen: Proxy['seen'] = [];
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    seen.push({
      method: req.method!,
      url: req.url!,
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
    });
    const fault = faults.shift();
    if (fault === '429' || fault === '429-wait-20s' || fault === '503') {
      const code = fault === '503' ? 'unavailable' : 'rate_limited';
      res.writeHead(fault === '503' ? 503 : 429, {
        'content-type': 'application/json',
        'retry-after': fault === '429-wait-20s' ? '20' : '0',
      });
      return res.end(JSON.stringify({ error: { code, message: 'try again', request_id: 'req_proxy' } }));
    }
    if (fault === '409-in-progress' || fault === '409-conflict') {
      const code = fault === '409-conflict' ? 'conflict' : 'idempotency_in_progress';
      res.writeHead(409, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(JSON.stringify({ error: { code, message: 'in flight', request_id: 'req_proxy' } }));
    }
    if (fault === 'reset') return req.socket.destroy();
    if (fault === 'hang') return;
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)),
    ) as Record<string, string>;
    const answer = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers,
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    const body = Buffer.from(await answer.arrayBuffer());
    if (fault === 'lose-answer') return req.socket.destroy();
    res.writeHead(
      answer.status,
      Object.fromEntries(
        [...answer.headers].filter(([name]) => !['content-length', 'transfer-encoding', 'connection'].includes(name)),
      ),
    );
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

forEachDialect('TypeScript client retries, timeouts and token refresh', (dialect) => {
  const t = useTestApp(dialect);
  let proxy: Proxy;
  let direct: ServiceClient;
  const client = (options: Partial<ConstructorParameters<typeof ServiceClient>[0]> = {}) =>
    new ServiceClient({
      baseUrl: proxy.url,
      apiKey: t.key,
      projectId: t.projectId,
      endUserId: 'alice',
      retryBaseMs: 1,
      ...options,
    });

  beforeAll(async () => {
    const origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
    proxy = await startProxy(origin);
    direct = new ServiceClient({ baseUrl: origin, apiKey: t.key, projectId: t.projectId, endUserId: 'alice' });
  });
  afterAll(() => proxy?.close());
  const countOf = async (text: string) =>
    (await direct.memories.export()).memories.filter((m) => m.text === text).length;

  it('retries a write answered 429 then 503 with the same Idempotency-Key, and writes it once', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('429', '503');
    const added = (await client().memories.add({ text: 'Retried through 429 and 503' })) as Memory;
    expect(added.text).toBe('Retried through 429 and 503');
    expect(proxy.seen).toHaveLength(3);
    const keys = new Set(proxy.seen.map((s) => s.idempotencyKey));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^engram-client-/);
    expect(await countOf('Retried through 429 and 503')).toBe(1);
  });

  it('retries 409 idempotency_in_progress with the same key (the first attempt still running), not another 409', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('409-in-progress', '409-in-progress');
    const added = (await client().memories.add({ text: 'Retried while in progress' })) as Memory;
    expect(added.text).toBe('Retried while in progress');
    expect(proxy.seen).toHaveLength(3);
    expect(new Set(proxy.seen.map((s) => s.idempotencyKey)).size).toBe(1);
    proxy.faults.push('409-conflict');
    const conflict = await client()
      .memories.add({ text: 'A plain conflict' })
      .catch((e: unknown) => e);
    expect(conflict).toMatchObject({ status: 409, code: 'conflict' });
    expect(await countOf('Retried while in progress')).toBe(1);
  });

  it('a write whose answer was lost is retried and replayed, not written twice', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('lose-answer');
    const added = (await client().memories.add({ text: 'The first answer was lost' })) as Memory;
    expect(proxy.seen).toHaveLength(2);
    expect(proxy.seen[0]!.idempotencyKey).toBe(proxy.seen[1]!.idempotencyKey);
    expect(await direct.memories.get(added.id)).toMatchObject({ id: added.id });
    expect(await countOf('The first answer was lost')).toBe(1);
  });

  it('retries reads after a reset connection; gives up after maxRetries with the last error', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('reset');
    expect(await client().health.live()).toMatchObject({ status: 'ok' });
    expect(proxy.seen).toHaveLength(2);

    proxy.seen.length = 0;
    proxy.faults.push('503', '503', '503');
    const error = await client({ maxRetries: 2 })
      .memories.query({ query: 'anything' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngramError);
    expect(error).toMatchObject({ status: 503, code: 'unavailable', request_id: 'req_proxy', retryAfter: 0 });
    expect(proxy.seen).toHaveLength(3);
    // A read sent as POST is retried without an Idempotency-Key: the server records none for it.
    expect(proxy.seen.map((s) => [s.method, s.idempotencyKey])).toEqual([
      ['POST', undefined],
      ['POST', undefined],
      ['POST', undefined],
    ]);
  });

  it('with retries off, a write carries no Idempotency-Key and fails at once', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('503');
    const error = await client({ maxRetries: 0 })
      .memories.add({ text: 'Not retried' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503 });
    expect(proxy.seen).toEqual([expect.objectContaining({ idempotencyKey: undefined })]);
    expect(await countOf('Not retried')).toBe(0);
  });

  it('addMany reports the items of a batch whose request failed as failed, and goes on with the next', async () => {
    proxy.seen.length = 0;
    // The first and third bulk-add requests pass; the second is refused, and not retried.
    proxy.faults.push('pass', '503', 'pass');
    const outcome = await client({ maxRetries: 0 }).memories.addMany(
      Array.from({ length: 120 }, (_, i) => ({ text: `Batch item ${i}` })),
    );
    expect(proxy.seen).toHaveLength(3);
    expect(outcome.totals).toEqual({ created: 70, skipped: 0, failed: 50 });
    expect(outcome.results.filter((r) => r.status === 'failed').map((r) => r.index)).toEqual(
      Array.from({ length: 50 }, (_, i) => 50 + i),
    );
    expect(outcome.results[50]).toMatchObject({ error: { code: 'unavailable' } });
    expect(await countOf('Batch item 60')).toBe(0);
    expect(await countOf('Batch item 110')).toBe(1);
  });

  it('times out an attempt, and stops at once when the caller aborts', async () => {
    proxy.faults.push('hang');
    const timedOut = await client({ maxRetries: 0, timeoutMs: 200 })
      .health.live()
      .catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ status: 0, code: 'timeout' });

    proxy.seen.length = 0;
    proxy.faults.push('hang');
    const controller = new AbortController();
    const pending = client()
      .health.live({ signal: controller.signal })
      .catch((e: unknown) => e);
    // Aborted once the attempt is under way (the proxy holds it), however long it took to get there.
    for (let i = 0; i < 1200 && proxy.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    controller.abort();
    const aborted = await pending;
    expect(aborted).not.toBeInstanceOf(EngramError);
    expect((aborted as Error).name).toBe('AbortError');
    expect(proxy.seen).toHaveLength(1);
  });

  it('timeoutMs bounds the whole call: a Retry-After past it fails at once with the RateLimitError', async () => {
    proxy.seen.length = 0;
    proxy.faults.push('429-wait-20s');
    const failed = await client({ timeoutMs: 2_000, maxRetryDelayMs: 60_000 })
      .memories.add({ text: 'Never waits 20 s' })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(RateLimitError);
    expect(failed).toBeInstanceOf(EngramError);
    expect(failed).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 20, name: 'RateLimitError' });
    expect(proxy.seen).toHaveLength(1);
    // Within the deadline it waits and retries as before.
    proxy.faults.push('429');
    expect(
      ((await client({ timeoutMs: 10_000 }).memories.add({ text: 'Retried within the deadline' })) as Memory).text,
    ).toBe('Retried within the deadline');
  });

  it('the control client renews a refused access token once with its refresh token', async () => {
    const login = await t.login();
    // A token that looks valid for an hour but that the server refuses: the 401 makes the client refresh.
    const payload = Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
    const renewed: string[] = [];
    const control = new ControlClient({
      baseUrl: proxy.url,
      tokens: {
        access_token: `e30.${payload}.bad`,
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: login.refreshToken,
        refresh_expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        session_id: login.sessionId,
      },
      onTokens: (tokens) => renewed.push(tokens.access_token),
    });
    expect(await control.billing.currentPlan()).toBeDefined();
    expect(renewed).toHaveLength(1);
    expect(control.session?.access_token).toBe(renewed[0]);
  });
});
