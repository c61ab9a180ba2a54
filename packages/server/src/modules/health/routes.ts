import { accessSync, constants } from 'node:fs';
import { dirname } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../store/database.js';
import { migrationStatus } from '../../store/migrate.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ database: Database }> = async (app, { database }) => {
  const Status = Type.Object({ status: Type.String() });
  app.get('/healthz', { schema: { tags: ['health'], summary: 'Liveness', response: { 200: Status } } }, async () => ({
    status: 'ok',
  }));
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'Readiness: the database answers and has every migration of this build',
        description:
          '503 `database_unavailable` while the database cannot be reached; 503 `database_not_migrated` when it lacks a migration of this build (a database re-created empty under a running server); 503 `database_read_only` when the SQLite file or its directory cannot be written (reads are still served, writes answer 503).',
        response: { 200: Status, 503: Status },
      },
    },
    async (_request, reply) => {
      try {
        await database.ping();
      } catch {
        return reply.status(503).header('Retry-After', '1').send({ status: 'database_unavailable' });
      }
      const { pending } = await migrationStatus(database);
      if (pending.length > 0)
        return reply.status(503).header('Retry-After', '1').send({ status: 'database_not_migrated' });
      if (!writable(database.config))
        return reply.status(503).header('Retry-After', '1').send({ status: 'database_read_only' });
      return { status: 'ready' };
    },
  );
};

/** SQLite: whether the file and its directory (the WAL and its index beside it) can be written; PostgreSQL reports a read-only server itself. */
function writable(config: Database['config']): boolean {
  if (config.dialect !== 'sqlite' || config.path === ':memory:' || config.path === '') return true;
  try {
    accessSync(config.path, constants.W_OK);
    accessSync(dirname(config.path), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
