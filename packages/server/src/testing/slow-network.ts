import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP relay to a real server that holds back everything the server sends by `delayMs` (in order):
 * a slow network between a process and its database, under which a notification arrives late.
 */
export async function startSlowRelay(target: { host: string; port: number }, delayMs: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
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
    // Timers of one duration fire in the order they were set, so the bytes keep their order.
    upstream.on('data', (chunk) => void setTimeout(() => client.destroyed || client.write(chunk), delayMs));
    upstream.on('end', () => void setTimeout(() => client.end(), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
