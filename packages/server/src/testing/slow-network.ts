import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { LISTENER_PROBE_PREFIX } from '../store/listener.js';
import { until } from './until.js';

export interface SlowRelay {
  port: number;
  /** The notifications the relay has passed on to its clients so far, in the order it did. */
  notifications: Array<{ channel: string; payload: string }>;
  close(): Promise<void>;
}

/**
 * A TCP relay to a real PostgreSQL server that holds back everything the server sends by `delayMs`
 * (in order): a slow network between a process and its database, under which a notification
 * arrives late. It reads the server's messages it passes on, to tell when a notification has reached
 * the process (heardEverything); a client asking for SSL is not supported.
 */
export async function startSlowRelay(target: { host: string; port: number }, delayMs: number): Promise<SlowRelay> {
  const sockets = new Set<Socket>();
  const notifications: SlowRelay['notifications'] = [];
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    const passedOn = serverMessages((type, body) => {
      // NotificationResponse: the notifying backend's pid, then the channel and the payload, each ending in a NUL.
      if (type !== 'A') return;
      const [channel = '', payload = ''] = body.subarray(4).toString('utf8').split('\0');
      notifications.push({ channel, payload });
    });
    // Timers of one duration fire in the order they were set, so the bytes keep their order.
    upstream.on(
      'data',
      (chunk: Buffer) =>
        void setTimeout(() => {
          if (client.destroyed) return;
          client.write(chunk);
          passedOn(chunk);
        }, delayMs),
    );
    upstream.on('end', () => void setTimeout(() => client.end(), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    notifications,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Splits a server's byte stream into its messages (a type byte, a length counting itself, a body). */
function serverMessages(onMessage: (type: string, body: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 5) {
      const end = 1 + pending.readInt32BE(1);
      if (pending.length < end) break;
      onMessage(String.fromCharCode(pending[0]!), pending.subarray(5, end));
      pending = pending.subarray(end);
    }
  };
}

/**
 * Waits until the process behind `relay` listens on each of `channels` (its probe came back:
 * store/listener.ts) and has been passed every notification committed before the call: PostgreSQL
 * sends a listener its notifications in commit order, so a marker notified now (on the first
 * channel, which makes the process forget what it holds for it, as any change does) comes after
 * them all. They are then in the process's socket ahead of any request sent afterwards.
 */
export async function heardEverything(relay: SlowRelay, databaseUrl: string, channels: string[]): Promise<void> {
  const probed = (channel: string) =>
    relay.notifications.some((n) => n.channel === channel && n.payload.startsWith(LISTENER_PROBE_PREFIX));
  await until(() => channels.every(probed), `the process behind the relay to listen on ${channels.join(', ')}`);
  const marker = `marker ${randomUUID()}`;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_notify($1, $2)', [channels[0], marker]);
  } finally {
    await client.end();
  }
  await until(
    () => relay.notifications.some((n) => n.payload === marker),
    'the marker to reach the process behind the relay',
  );
}
