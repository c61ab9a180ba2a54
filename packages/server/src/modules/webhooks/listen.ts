import { createServer, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

/**
 * `engram webhooks listen`: a local receiver for developers debugging an integration. Prints each
 * delivery (id, type, whether its signature verifies, body) and answers 200, or 401 when a secret
 * is given and the signature does not verify (so Engram's retries can be watched too).
 */
export function listen(port: number, secret: string | undefined, out: NodeJS.WritableStream): Promise<Server> {
  const verifier = secret ? new Webhook(secret) : null;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      let signature = 'not checked (no --secret)';
      let status = 200;
      if (verifier) {
        try {
          verifier.verify(body, headers);
          signature = 'valid';
        } catch (error) {
          signature = `INVALID (${error instanceof Error ? error.message : String(error)})`;
          status = 401;
        }
      }
      let type = '?';
      let pretty = body;
      try {
        const parsed = JSON.parse(body) as { type?: string };
        type = parsed.type ?? '?';
        pretty = JSON.stringify(parsed, null, 2);
      } catch {
        // not JSON: printed as received
      }
      out.write(
        `${new Date().toISOString()} ${req.method} ${req.url} webhook-id=${headers['webhook-id'] ?? '-'} type=${type} signature: ${signature}\n${pretty}\n\n`,
      );
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'invalid signature');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
