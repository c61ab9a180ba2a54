import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

/** OpenAPI 3.1 generated from the route schemas, at /openapi.json, with a readable page at /docs. */
export const openapi = fp(async (app: FastifyInstance, opts: { version: string }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Engram',
        version: opts.version,
        description: 'Memory service for AI applications: store what end users said and did, and get the right memories back.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth;
      if (!auth || !schema) return { schema, url };
      // Document the credentials and scoping headers once, from the route's auth declaration.
      const accepts = auth.accepts ?? ['api_key'];
      const headers: Record<string, unknown> = {};
      if (accepts.includes('bearer')) {
        headers['x-organization-id'] = { type: 'string', description: "Bearer calls: the organization to act in; default the caller's first" };
        if (auth.bearerProject) headers['x-project-id'] = { type: 'string', description: 'The project (of the acting organization); required' };
      }
      if (accepts.includes('api_key')) {
        headers['x-project-id'] = {
          type: 'string',
          description: `API-key calls: the project; ${(auth.project ?? 'required') === 'required' ? 'required' : 'optional'} unless the key is locked to a project`,
        };
        headers['x-tenant-id'] = { type: 'string', description: 'Tenant, for cross-tenant operator keys' };
      }
      const endUser = auth.endUser ?? 'none';
      if (endUser !== 'none') {
        headers['x-end-user-id'] = {
          type: 'string',
          description: `Opaque end-user id (not an e-mail address); ${endUser === 'required' ? 'required' : 'optional, narrows the scope'}`,
        };
      }
      const required = [...(endUser === 'required' ? ['x-end-user-id'] : []), ...(auth.bearerProject ? ['x-project-id'] : [])];
      const requirement = [auth.scope && `scope ${auth.scope}`, auth.capability && `capability ${auth.capability} (bearer)`].filter(Boolean);
      const description = [schema.description, requirement.length ? `Requires ${requirement.join(' and ')}.` : '']
        .filter(Boolean)
        .join('\n\n');
      const security = accepts.map((kind) => (kind === 'bearer' ? { bearer: [] } : { apiKey: [] }));
      return {
        schema: { ...schema, description, security, headers: { type: 'object', properties: headers, required } } as never,
        url,
      };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
