import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { AppError, invalid, type ErrorBody } from '../core/errors.js';

/**
 * What happens below Fastify, on the socket: errors of Node's HTTP parser (malformed requests,
 * oversized headers, request timeouts) and the per-client connection cap. Answered with the same
 * error body and X-Request-ID as every other error, then the connection is closed.
 */

/** The answer to an error Node's HTTP parser (or its request timeout) raised on a connection. */
function parserError(error: NodeJS.ErrnoException): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request (headers and body) did not arrive in time');
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', 'The request headers are too large');
    default:
      return invalid('request', 'The HTTP request is malformed');
  }
}

/** Writes an error response straight to a socket (no request was parsed, so no reply object exists). */
export function answerOnSocket(socket: Socket, error: AppError, requestId: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body: ErrorBody = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.field ? { field: error.field } : {}),
      request_id: requestId,
    },
  };
  const text = JSON.stringify(body);
  const headers = {
    ...error.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(text)),
    'X-Request-ID': requestId,
    Connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${head}\r\n${text}`);
  socket.destroySoon();
}

/** Fastify's clientErrorHandler: the parser's errors in the documented error body. */
export function clientErrors(nextRequestId: () => string) {
  return (error: NodeJS.ErrnoException, socket: Socket) => {
    // A reset connection has nobody left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    answerOnSocket(socket, parserError(error), nextRequestId());
  };
}

/**
 * Caps the connections one client address holds open (slowloris and connection floods): one over
 * the cap is answered 429 rate_limited and closed. Behind a proxy every client shares its address,
 * so there set the cap to 0 (none) and let the proxy cap connections.
 */
export function capConnectionsPerClient(server: Server, max: number, nextRequestId: () => string): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      const error = new AppError(
        'rate_limited',
        `Too many open connections from this client (at most ${max})`,
        undefined,
        { 'Retry-After': '1' },
      );
      answerOnSocket(socket, error, nextRequestId());
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/**
 * The HTTP server's connections, for a stop that finishes the requests under way and no more. Node's
 * server.close() (Fastify's close, which also closes idle keep-alive connections) waits for every
 * connection to end, and counts one that has not sent a request yet (a client's spare connection, a
 * health checker that connected and waits) as busy: the process took 70 s, and forever with a raw
 * connection held open, to exit after SIGTERM. `close()` ends every connection with no request under
 * way at once, and each other one as soon as its last response is sent.
 */
export function closingConnections(server: Server): { close(): void } {
  const requests = new Map<Socket, number>();
  let closing = false;
  server.on('connection', (socket: Socket) => {
    requests.set(socket, 0);
    socket.once('close', () => requests.delete(socket));
  });
  server.on('request', (request, response) => {
    const socket = request.socket;
    requests.set(socket, (requests.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (requests.get(socket) ?? 1) - 1;
      requests.set(socket, left);
      if (closing && left === 0) socket.destroySoon();
    });
  });
  return {
    close: () => {
      closing = true;
      for (const [socket, underWay] of requests) if (underWay === 0) socket.destroySoon();
    },
  };
}
