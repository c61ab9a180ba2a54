import type { BaseLogger } from 'pino';
import { JobRunner } from './jobs/runner.js';
import { Schedule } from './jobs/schedule.js';
import { DeliveryLoop } from './modules/webhooks/index.js';
import type { Services } from './services.js';
import { startLeadership } from './store/leadership.js';

export interface Background {
  stop(): Promise<void>;
}

/**
 * Background work on the service graph, without HTTP: the job runner (leased rows, so any number
 * of processes may run it), the webhook delivery loop (outbox dispatch and leased deliveries) and
 * the periodic chores (purges). `engram worker`
 * runs only this; `engram serve` runs it beside the HTTP server unless ENGRAM_RUN_JOBS=false. Of the processes
 * running it on one PostgreSQL database, one leads (store/leadership.ts): it runs the database-wide chores and
 * polls often for work the others committed; the others work on what they commit themselves and poll slowly.
 */
export function startBackground(services: Services, log: Pick<BaseLogger, 'info' | 'warn' | 'error'>): Background {
  const leadership = startLeadership(services.database, log);
  const runner = new JobRunner(services.database, services.jobs, log, undefined, leadership);
  const schedule = new Schedule(services.chores, log, leadership.leads);
  const deliveries = new DeliveryLoop(
    services.database,
    services.webhooks,
    services.outboxDispatchers,
    log,
    leadership,
  );
  runner.start();
  schedule.start();
  deliveries.start();
  return {
    stop: async () => {
      await Promise.all([runner.stop(), schedule.stop(), deliveries.stop()]);
      await leadership.close();
    },
  };
}
