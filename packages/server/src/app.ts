import { randomBytes } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Services } from './services.js';
import { authentication } from './http/auth.js';
import { errorHandling, frameworkErrors } from './http/error-handler.js';
import { capConnectionsPerClient, clientErrors, closingConnections } from './http/connections.js';
import { idempotency } from './http/idempotency.js';
import { rateLimits } from './http/rate-limit.js';
import { openapi } from './http/openapi.js';
import { metrics } from './http/metrics.js';
import { serializersOnFirstUse, validatorCompiler } from './http/validation.js';
import { useJsonParser } from './http/input.js';
import { healthRoutes } from './modules/health/routes.js';
import { consoleRoutes } from './http/console.js';
import { mcpRoutes } from './http/mcp.js';
import { memoryRoutes } from './modules/memories/routes.js';
import { retrievalRoutes } from './modules/retrieval/routes.js';
import { synthesisRoutes } from './modules/synthesis/routes.js';
import { intelligenceRoutes } from './modules/intelligence/routes.js';
import { v1Routes } from './modules/v1/routes.js';
import type { RouteAccess } from './core/access.js';
import { authRoutes, recordRouteAccess } from './modules/auth/routes.js';
import { orgRoutes } from './modules/org/routes.js';
import { auditRoutes } from './modules/audit/routes.js';
import { billing } from './modules/billing/routes.js';
import { ingestRoutes } from './modules/ingest/routes.js';
import { connectorRoutes } from './modules/connectors/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { webhookBacklog } from './modules/webhooks/index.js';
import { exportRoutes } from './modules/exports/routes.js';
import { peopleRoutes } from './modules/people/routes.js';
import { VERSION } from './version.js';

const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Room for a 256-character end-user id in a path even when every character is percent-encoded UTF-8. */
const MAX_PARAM_LENGTH = 256 * 9;

// A random per-process prefix and a counter: unique across processes, and cheaper than fresh randomness per request.
const REQUEST_ID_PREFIX = randomBytes(6).toString('hex');
let requestCounter = 0;
const nextRequestId = () => `req_${REQUEST_ID_PREFIX}${(requestCounter++).toString(16).padStart(12, '0')}`;

export interface AppOptions {
  services: Services;
  /** Where request logs go; tests capture them to check that no secret is written. */
  logStream?: NodeJS.WritableStream;
}

/**
 * The HTTP face of a service graph (services.ts): plugins and routes only. Background work is
 * not started here (worker.ts); the caller decides whether to listen or inject.
 */
export async function buildApp({ services, logStream }: AppOptions): Promise<FastifyInstance> {
  const { config, database, tokens } = services;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Credentials travel only in these headers; they are never logged.
      redact: {
        paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
      ...(logStream ? { stream: logStream } : {}),
    },
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    // Slow bodies (slowloris) time out with 408; Node checks open requests every connectionsCheckingInterval.
    requestTimeout: config.http.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, config.http.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, config.http.requestTimeoutMs / 4)),
    },
    clientErrorHandler: clientErrors(nextRequestId),
    trustProxy: config.trustProxy,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && VALID_REQUEST_ID.test(incoming) ? incoming : nextRequestId();
    },
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: { buildSerializer: serializersOnFirstUse } },
    // Fastify's own logging writes two lines per request; the onResponse hook below writes one.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  capConnectionsPerClient(app.server, config.http.maxConnectionsPerClient, nextRequestId);
  // A stop ends the connections with no request under way at once (http/connections.ts#closingConnections).
  const connections = closingConnections(app.server);
  app.addHook('preClose', (done) => {
    connections.close();
    done();
  });
  app.setValidatorCompiler(validatorCompiler);
  // JSON only: text/plain bodies are refused with 415 like any other type.
  app.removeContentTypeParser('text/plain');
  // Fastify's JSON parser (prototype poisoning refused), then the one input rule for every body.
  useJsonParser(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-ID', request.id);
  });
  // One line per request, once it is answered (no headers: credentials never reach the log).
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: loggedUrl(request),
        route: request.routeOptions.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
  });

  await app.register(errorHandling, { database });
  await app.register(openapi, { version: VERSION });
  await app.register(metrics, {
    database,
    indexCache: () => services.retrieval.cache.stats(),
    intelligenceCacheBytes: () => services.intelligence.cacheBytes,
    modelReadings: () => services.intelligence.modelReadings,
    webhookBacklog: () => webhookBacklog(database.db),
    token: config.metricsToken,
  });
  // The search thread (modules/retrieval/thread.ts) ends with the app, after the requests under way.
  app.addHook('onClose', () => services.retrieval.close());
  app.addHook('onClose', () => services.reader.close());
  app.addHook('onClose', async () => services.intelligence.close());
  await app.register(rateLimits, {
    rateLimit: config.rateLimit,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
  });
  // Every route's auth declaration, for the catalogue and the key test.
  const access: RouteAccess[] = [];
  const routeAccess = () => access;
  app.addHook('onRoute', (route) => recordRouteAccess(access, route.method, route.url, route.config?.auth));
  await app.register(authentication, { credentials: services.credentials });
  await app.register(idempotency, {
    database,
    secretKey: services.secretKey,
    pseudonymize: services.pseudonymize,
    ...(config.testFailpoint ? { failpoint: config.testFailpoint } : {}),
  });
  await app.register(healthRoutes, { database });
  await app.register(consoleRoutes);
  await app.register(mcpRoutes);
  await app.register(memoryRoutes, { database, erase: services.erase });
  await app.register(ingestRoutes, {
    database,
    blobs: services.blobs,
    jobs: services.jobs,
    erase: services.erase,
    reader: services.reader,
    settings: config.upload,
  });
  await app.register(connectorRoutes, services.connectors);
  await app.register(retrievalRoutes, { database, jobs: services.jobs, engine: services.retrieval });
  await app.register(synthesisRoutes, { database, retrieval: services.retrieval.retrieval, llm: services.llm });
  await app.register(intelligenceRoutes, {
    database,
    jobs: services.jobs,
    intelligence: services.intelligence,
    llm: services.llm,
  });
  await app.register(v1Routes, {
    database,
    retrieval: services.retrieval.retrieval,
    monthlyTurnAllowance: services.monthlyTurnAllowance,
  });
  await app.register(authRoutes, {
    database,
    tokens,
    settings: config.auth,
    loginRateLimit: config.rateLimit.loginMax,
    routeAccess,
  });
  await app.register(orgRoutes, { database, routeAccess });
  await app.register(auditRoutes, { database });
  await app.register(billing, { database });
  await app.register(webhookRoutes, { database, settings: services.webhooks });
  await app.register(exportRoutes, {
    database,
    blobs: services.blobs,
    jobs: services.jobs,
    ttlSeconds: config.exports.ttlSeconds,
  });
  await app.register(peopleRoutes, {
    database,
    mailer: services.mailer,
    publicUrl: config.publicUrl,
    links: config.links,
    publicRateLimit: config.rateLimit.loginMax,
  });
  return app;
}

/** Query parameters naming an end user (`GET /v1/memory/memories?user_id=`), by their decoded name. */
const END_USER_PARAMETERS = new Set(['user_id', 'end_user_id']);

/**
 * The URL as the request log keeps it: a path segment or a query parameter naming an end user
 * (DELETE /memory/user/{end_user_id}, ?user_id=) is replaced, since the id is personal data the log would
 * otherwise keep after the end user is removed.
 */
export function loggedUrl(request: FastifyRequest): string {
  const at = request.url.indexOf('?');
  const [path, query] = at < 0 ? [request.url, ''] : [request.url.slice(0, at), request.url.slice(at + 1)];
  const loggedQuery = query
    ? `?${query
        .split('&')
        .map((part) => {
          const name = part.split('=', 1)[0]!;
          return END_USER_PARAMETERS.has(decodedName(name)) ? `${name}=[end user]` : part;
        })
        .join('&')}`
    : '';
  const route = request.routeOptions.url;
  if (!route?.includes(':end_user_id')) return path + loggedQuery;
  const pattern = route.split('/');
  const segments = path.split('/');
  if (segments.length !== pattern.length) return route + loggedQuery;
  return segments.map((s, i) => (pattern[i] === ':end_user_id' ? '[end user]' : s)).join('/') + loggedQuery;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}
