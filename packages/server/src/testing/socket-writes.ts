import { Socket } from 'node:net';

/**
 * Records every socket write (`_write` or `_writev`, one per write system call node makes) to `port`, on any
 * connection, until `stop()`: what a statement costs the database in this 2-core VM, counted on the real socket.
 */
export function watchSocketWrites(port: number): { written: string[]; stop: () => void } {
  const socket = Socket.prototype as unknown as Record<
    '_write' | '_writev',
    (this: Socket, ...args: unknown[]) => unknown
  >;
  const original = { _write: socket._write, _writev: socket._writev };
  const written: string[] = [];
  const counting = (method: '_write' | '_writev') =>
    function (this: Socket, ...args: unknown[]) {
      if (this.remotePort === port) written.push(method);
      return original[method].apply(this, args);
    };
  socket._write = counting('_write');
  socket._writev = counting('_writev');
  return { written, stop: () => Object.assign(socket, original) };
}
