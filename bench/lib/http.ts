import net from 'node:net';

/**
 * A lean keep-alive JSON client for load generation, on raw sockets: the load generator shares this
 * machine's 2 cores with the server (and the database), so every microsecond it spends is taken
 * from what is measured. node:http's client cost more CPU per request than the server spent on
 * `GET /healthz` (0.10 against 0.08 ms); this one writes each request as one string and reads only
 * the status line, the framing headers and the body.
 *
 * Each socket carries one request at a time (no pipelining), as a browser or an SDK would; up to
 * `sockets` are opened, and requests beyond them wait for one to be free.
 */
export function jsonClient(baseUrl: string, headers: Record<string, string>, sockets = 64) {
  const url = new URL(baseUrl);
  const port = Number(url.port);
  const fixed = Object.entries({ host: url.host, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const idle: Connection[] = [];
  const waiting: Array<(connection: Connection) => void> = [];
  let open = 0;

  const acquire = (): Promise<Connection> | Connection => {
    for (let free = idle.pop(); free; free = idle.pop()) if (!free.closed) return free;
    if (open < sockets) {
      open++;
      return new Connection(url.hostname, port, () => open--);
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (connection: Connection) => {
    if (connection.closed) return;
    const next = waiting.shift();
    if (next) next(connection);
    else idle.push(connection);
  };

  return async function request(
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> {
    const payload = body === undefined ? '' : JSON.stringify(body);
    let head = `${method} ${path} HTTP/1.1\r\n${fixed}`;
    for (const name in extra) head += `${name}: ${extra[name]}\r\n`;
    if (body !== undefined)
      head += `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
    const connection = await acquire();
    try {
      return await connection.send(`${head}\r\n${payload}`);
    } finally {
      release(connection);
    }
  };
}

/** One keep-alive connection: a request is written whole, and its response read by its framing. */
class Connection {
  private readonly socket: net.Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private pending: { resolve: (r: { status: number; body: string }) => void; reject: (e: Error) => void } | undefined;
  closed = false;

  constructor(host: string, port: number, onClose: () => void) {
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.parse();
    });
    const fail = (error: Error) => {
      if (!this.closed) onClose();
      this.closed = true;
      this.pending?.reject(error);
      this.pending = undefined;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('connection closed')));
  }

  send(raw: string): Promise<{ status: number; body: string }> {
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(raw);
    });
  }

  /** Completes the pending request once its whole response is buffered (Content-Length or chunked). */
  private parse(): void {
    const data = this.buffered;
    const end = data.indexOf('\r\n\r\n');
    if (end < 0 || !this.pending) return;
    const head = data.toString('latin1', 0, end);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    let body: string;
    let consumed: number;
    if (length) {
      consumed = end + 4 + Number(length[1]);
      if (data.length < consumed) return;
      body = data.toString('utf8', end + 4, consumed);
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const chunks: Buffer[] = [];
      let at = end + 4;
      for (;;) {
        const line = data.indexOf('\r\n', at);
        if (line < 0) return;
        const size = parseInt(data.toString('latin1', at, line), 16);
        if (data.length < line + 2 + size + 2) return;
        if (size === 0) {
          consumed = line + 4;
          break;
        }
        chunks.push(data.subarray(line + 2, line + 2 + size));
        at = line + 2 + size + 2;
      }
      body = Buffer.concat(chunks).toString('utf8');
    } else {
      consumed = end + 4;
      body = '';
    }
    this.buffered = data.length === consumed ? Buffer.alloc(0) : data.subarray(consumed);
    const { resolve } = this.pending;
    this.pending = undefined;
    resolve({ status, body });
  }
}
