import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../store/database.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ database: Database }> = async (app, { database }) => {
  const Status = Type.Object({ status: Type.String() });
  app.get('/healthz', { schema: { tags: ['health'], summary: 'Liveness', response: { 200: Status } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', {
    schema: { tags: ['health'], summary: 'Readiness: the database answers', response: { 200: Status, 503: Status } },
  }, async (_request, reply) => {
    try {
      await database.ping();
      return { status: 'ready' };
    } catch {
      return reply.status(503).send({ status: 'database_unavailable' });
    }
  });
};
