import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { organizationOf } from '../../http/auth.js';
import type { Database } from '../../store/database.js';
import { currentPlan, PLANS, RequestCounter } from './service.js';

const Limit = Type.Union([Type.Integer(), Type.Null()], { description: 'null: unlimited' });
const Amounts = (limit: typeof Limit | ReturnType<typeof Type.Integer>) =>
  Type.Object({ memories: limit, monthly_turns: limit, requests: limit });

/**
 * Billing, not encapsulated: every authenticated request, of any route, counts against its
 * organization's monthly request allowance.
 */
export const billing = fp(async (root: FastifyInstance, { database }: { database: Database }) => {
  const counter = new RequestCounter(database.db);
  root.addHook('onClose', () => counter.close());
  root.addHook('onResponse', async (request) => {
    if (request.principal?.organizationId) counter.count(request.principal.organizationId);
  });
  await root.register(billingRoutes, { database, counter });
});

const billingRoutes: FastifyPluginAsyncTypebox<{ database: Database; counter: RequestCounter }> = async (
  app,
  { database, counter },
) => {
  app.get(
    '/org/billing/current-plan',
    {
      config: { auth: { accepts: ['bearer'], scope: 'billing:read', capability: 'billing.read' } },
      schema: {
        tags: ['billing'],
        summary: 'Current plan',
        description:
          `The plan (${Object.keys(PLANS).join(', ')}), its allowances, and usage in the current calendar month (UTC). ` +
          'Plans are set by the operator (`engram org set-plan`). Requests served by other processes reach the figure within seconds.',
        response: {
          200: Type.Object({
            organization_id: Type.String(),
            plan: Type.String(),
            allowances: Amounts(Limit),
            usage: Amounts(Type.Integer()),
            period_start: Type.String({ format: 'date-time' }),
            period_end: Type.String({ format: 'date-time' }),
          }),
        },
      },
    },
    async (request) => {
      // This process's pending counts first; other processes' reach the table within seconds.
      await counter.flush();
      return currentPlan(database.db, organizationOf(request).organizationId);
    },
  );
};
