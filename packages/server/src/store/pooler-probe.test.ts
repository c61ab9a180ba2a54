import { createConnection, createServer, type Server } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../testing/pgbouncer.js';
import { sessionsPooled } from './postgres-connections.js';

/**
 * The probe that decides whether statements may be named (store/postgres-connections.ts#sessionsPooled).
 * Its answer must not depend on what else uses the pooler: N processes starting together through one
 * PgBouncer once made the probe of backends across transactions answer "direct" (CI, stop 63), and
 * every named statement then failed with 42P05 until the pool gave naming up.
 */

const POSTGRES_URL = process.env.ENGRAM_TEST_DATABASE_URL;

/** A plain TCP relay to PostgreSQL: a proxy, not a pooler (HAProxy in TCP mode does the same). */
async function tcpRelay(url: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(url);
  const server: Server = createServer((socket) => {
    const upstream = createConnection(Number(target.port || 5432), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url: relayed.toString(), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe.skipIf(!POSTGRES_URL)('the pooler probe [postgres]', () => {
  it('finds no pooler on a direct connection nor through a TCP relay', async () => {
    expect(await sessionsPooled(POSTGRES_URL!)).toBe(false);
    const relay = await tcpRelay(POSTGRES_URL!);
    try {
      expect(await sessionsPooled(relay.url)).toBe(false);
    } finally {
      await relay.close();
    }
  });

  describe.skipIf(!pgbouncerInstalled)('through PgBouncer in transaction mode', () => {
    let bouncer: PgBouncer;
    beforeAll(async () => {
      bouncer = await startPgBouncer(POSTGRES_URL!, { poolSize: 3 });
    }, 30_000);
    afterAll(async () => {
      await bouncer?.stop();
    });

    it('finds the pooler every time, while other clients keep its server connections busy', async () => {
      const url = bouncer.through(POSTGRES_URL!);
      const busy = Array.from({ length: 6 }, () => new pg.Client({ connectionString: url }));
      await Promise.all(busy.map((client) => client.connect()));
      let stop = false;
      const load = busy.map(async (client) => {
        while (!stop) await client.query('SELECT pg_backend_pid(), pg_sleep(0.001)');
      });
      try {
        const answers = await Promise.all(Array.from({ length: 12 }, () => sessionsPooled(url)));
        expect(answers).toEqual(Array(12).fill(true));
      } finally {
        stop = true;
        await Promise.all(load);
        await Promise.all(busy.map((client) => client.end()));
      }
    }, 60_000);
  });
});
