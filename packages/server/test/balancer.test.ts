import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Balancer, haproxyInstalled, startBalancer } from '../src/testing/haproxy.js';
import { until } from '../src/testing/until.js';

/**
 * The shipped balancer configuration (docs/deploy/haproxy.cfg, run by Debian's HAProxy): one end
 * user's requests reach one process, a /v1 tenant's likewise, and when a process goes its end users
 * move to the others while everyone else stays (consistent hashing), a request that found it gone
 * being sent on. The processes here only say who they are: what is tested is the routing; the rig
 * with real processes is `npm run bench:fleet`.
 */

describe.skipIf(!haproxyInstalled)('the example HAProxy configuration', () => {
  const servers: Server[] = [];
  const addresses: string[] = [];
  let balancer: Balancer;

  const listen = (server: Server, port = 0) =>
    new Promise<number>((resolve) =>
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    );
  const process = (name: string) =>
    createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(name));
    });
  /** Which process served a request with these headers (the balancer's X-Engram-Process names it too). */
  const served = async (headers: Record<string, string>) => {
    const res = await fetch(`${balancer.url}/memory/query`, { method: 'POST', headers, body: '{}' });
    expect(res.status, balancer.log()).toBe(200);
    const name = await res.text();
    expect(res.headers.get('x-engram-process')).toBe(name.replace('process ', 'engram'));
    return name;
  };
  const users = Array.from({ length: 30 }, (_, i) => `end-user-${i}`);
  const placement = async () => {
    const at = new Map<string, string>();
    for (const user of users) at.set(user, await served({ 'x-end-user-id': user }));
    return at;
  };

  beforeAll(async () => {
    for (let i = 1; i <= 3; i++) {
      const server = process(`process ${i}`);
      servers.push(server);
      addresses.push(`127.0.0.1:${await listen(server)}`);
    }
    balancer = await startBalancer(addresses as [string, string, string]);
  });
  afterAll(async () => {
    await balancer?.stop();
    for (const server of servers) if (server.listening) await new Promise((r) => server.close(r));
  });

  it('sends each end user, and each /v1 tenant, to one process; requests naming nobody to any', async () => {
    const first = await placement();
    expect(await placement()).toEqual(first);
    // All three processes hold someone's end users.
    expect(new Set(first.values()).size).toBe(3);
    const tenant = await served({ 'x-tenant-id': 'tenant-a' });
    for (let i = 0; i < 5; i++) expect(await served({ 'x-tenant-id': 'tenant-a' })).toBe(tenant);
    // The end user decides over the tenant and the key.
    for (const user of users.slice(0, 5))
      expect(await served({ 'x-end-user-id': user, 'x-tenant-id': 'tenant-a', 'x-api-key': 'k' })).toBe(
        first.get(user),
      );
    const anyone = new Set<string>();
    for (let i = 0; i < 6; i++) anyone.add(await served({}));
    expect(anyone.size).toBe(3);
  });

  it("moves only a stopped process's end users, serves them elsewhere at once, and brings them back", async () => {
    const before = await placement();
    const gone = servers[1]!;
    await new Promise((r) => gone.close(r));
    // At once, before any health check has noticed: the refused connection is retried on another process.
    const after = await placement();
    for (const [user, name] of before) {
      if (name === 'process 2') expect(after.get(user)).not.toBe('process 2');
      else expect(after.get(user)).toBe(name);
    }
    await listen(gone, Number(addresses[1]!.split(':')[1]));
    // Back once the balancer has seen it healthy again (rise 2, inter 1s).
    await until(
      async () =>
        (await served({ 'x-end-user-id': [...before].find(([, n]) => n === 'process 2')![0] })) === 'process 2',
      'the process to be back',
      15_000,
    );
    expect(await placement()).toEqual(before);
  });
});
