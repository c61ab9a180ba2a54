import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Config } from '../config.js';
import { AppError } from '../core/errors.js';

/**
 * Per IP and per route request limits (429 rate_limited with Retry-After and RateLimit-* headers).
 * Counters live in this process, or in Redis when ENGRAM_REDIS_URL is set so that every process
 * shares them. They are counted before credentials are checked, so guessing keys is limited too.
 * A route can set a stricter limit in `config.rateLimit` (sign-in does).
 */
export const rateLimits = fp(
  async (app: FastifyInstance, opts: Pick<Config, 'rateLimit' | 'redisUrl' | 'redisPrefix'>) => {
    // The Redis client is loaded only by the processes configured to use it.
    const redis = opts.redisUrl
      ? new (await import('ioredis')).Redis(opts.redisUrl, {
          maxRetriesPerRequest: 1,
          connectTimeout: 2_000,
          lazyConnect: false,
        })
      : undefined;
    // An unreachable Redis is reported in the log and lets requests through (skipOnError) rather than failing them.
    redis?.on('error', (error: Error) =>
      app.log.warn({ err: { message: error.message } }, 'rate-limit store unavailable'),
    );
    await app.register(rateLimit, {
      global: true,
      max: opts.rateLimit.max,
      timeWindow: opts.rateLimit.windowSeconds * 1000,
      hook: 'onRequest',
      keyGenerator: (request: FastifyRequest) => `${request.ip}|${request.method}|${request.routeOptions.url ?? '*'}`,
      enableDraftSpec: true,
      skipOnError: true,
      ...(redis ? { redis, nameSpace: `${opts.redisPrefix}rate-limit:` } : {}),
      errorResponseBuilder: (_request, context) =>
        new AppError('rate_limited', `Too many requests; retry after ${context.after}`),
    });
    if (redis) app.addHook('onClose', async () => void (await redis.quit().catch(() => {})));
  },
);
