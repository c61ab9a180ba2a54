import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What a test receiver does with a request: answer it (status, body), misbehave, or hold it unanswered until released. */
export type Behaviour = 'ok' | 'echo' | 'fail' | 'not_found' | 'redirect' | 'slow' | 'hang' | 'reset' | 'huge' | 'hold';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Whether the signature verified with the secret the path was registered with (standardwebhooks, as a receiver would). */
  verified: boolean;
}

/**
 * A real local webhook receiver: each path has a behaviour (changeable at any time) and, once a
 * secret is set, verifies every signature with the `standardwebhooks` package.
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Requests that arrived while another request with the same webhook-id was still being answered. */
  overlaps = 0;
  private readonly active = new Set<string>();
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly secrets = new Map<string, string[]>();
  private held: Array<{ path: string; req: IncomingMessage; res: ServerResponse }> = [];
  private readonly server = createServer((req, res) => this.handle(req, res));
  private readonly sockets = new Set<import('node:net').Socket>();
  url = '';

  async start(): Promise<this> {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  set(path: string, behaviour: Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  /** Secrets a path's deliveries must verify with (each one on its own). */
  verifyWith(path: string, ...secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  /** Answers the requests held at `path` as `behaviour` answers. */
  release(path: string, behaviour: Exclude<Behaviour, 'hold'>): void {
    for (const { req, res } of this.held.filter((h) => h.path === path)) this.answer(req, res, behaviour);
    this.held = this.held.filter((h) => h.path !== path);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Lets go of what was received (a test searching this process's heap for what deliveries carried). */
  clear(): void {
    this.received.length = 0;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const id = String(req.headers['webhook-id']);
    if (this.active.has(id)) this.overlaps++;
    this.active.add(id);
    res.on('close', () => this.active.delete(id));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const secrets = this.secrets.get(path) ?? [];
      const verified =
        secrets.length > 0 &&
        secrets.every((secret) => {
          try {
            new Webhook(secret).verify(body, headers);
            return true;
          } catch {
            return false;
          }
        });
      const behaviour = this.behaviours.get(path) ?? 'ok';
      if (behaviour !== 'hang') this.received.push({ path, headers, body, verified });
      if (behaviour === 'hold') this.held.push({ path, req, res });
      else this.answer(req, res, behaviour, body);
    });
  }

  private answer(req: IncomingMessage, res: ServerResponse, behaviour: Exclude<Behaviour, 'hold'>, body = ''): void {
    switch (behaviour) {
      case 'ok':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
      // A receiver answering with what it was sent: its answer holds whatever the delivery carried.
      case 'echo':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      case 'fail':
        return void res.writeHead(500).end('receiver is down');
      case 'not_found':
        return void res.writeHead(404).end('no such hook');
      case 'redirect':
        return void res.writeHead(302, { location: `${this.url}/ok-elsewhere` }).end();
      case 'slow':
        return void setTimeout(() => res.writeHead(200).end('slow but fine'), 300);
      case 'hang':
        return; // never answers
      case 'reset':
        return void req.socket.destroy();
      case 'huge': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const block = Buffer.alloc(64 * 1024, 'x');
        let sent = 0;
        const pump = () => {
          while (sent < 10 * 1024 * 1024) {
            sent += block.length;
            if (!res.write(block)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => undefined);
        return pump();
      }
    }
  }
}
