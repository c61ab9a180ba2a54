import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { lookupTable } from '../core/lookup.js';

/** Where `npm install` (the console package's prepare) and `npm start` put the built console. */
export const CONSOLE_DIRECTORY = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/**
 * The console's pages may load only their own scripts and styles and talk only to this server: no
 * inline script, no other origin, never framed (clickjacking), no <base> rewriting.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

const TYPES: Record<string, string> = lookupTable({
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
});
/** Vite's asset names: a hash in the name, no directory part, so no path can leave the folder. */
const ASSET_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.[a-z0-9]+$/;

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

/**
 * Serves the web console at /console: hashed assets are immutable (a new build has new names),
 * the page itself is revalidated on every load (no-cache), and every other path under /console is
 * the page too, so a reload on a console URL works. Public: the page signs in with the control plane.
 * The page is also the OAuth consent return (/connectors/oauth/callback), never stored: its address carries a code.
 */
export const consoleRoutes: FastifyPluginAsync<{ directory?: string }> = async (
  app,
  { directory = CONSOLE_DIRECTORY },
) => {
  const page = async (reply: FastifyReply) => {
    const html = await readFile(join(directory, 'index.html')).catch(() => undefined);
    secure(reply);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-cache');
    if (!html)
      return reply
        .status(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm install` (or `npm run build -w @engram/console`).\n');
    return reply.type(TYPES['.html']!).send(html);
  };
  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/', 308));
  app.get('/console/', { schema: { hide: true } }, async (_request, reply) => page(reply));
  app.get<{ Params: { name: string } }>('/console/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const { name } = request.params;
    const body = ASSET_NAME.test(name)
      ? await readFile(join(directory, 'assets', name)).catch(() => undefined)
      : undefined;
    secure(reply);
    if (!body)
      return reply
        .status(404)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('Not found\n');
    return reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .type(TYPES[extname(name)] ?? 'application/octet-stream')
      .send(body);
  });
  app.get('/console/*', { schema: { hide: true } }, async (_request, reply) => page(reply));
  // The default OAuth redirect (ENGRAM_OAUTH_REDIRECT_URL): the console's page hands the provider's
  // code and state to the console tab that asked for consent, which completes it with its session.
  app.get('/connectors/oauth/callback', { schema: { hide: true } }, async (_request, reply) =>
    page(reply.header('cache-control', 'no-store')),
  );
};
