/** Every backend of the server's database terminated, 3 times 300 ms apart: a failover, a restart, a pooler recycling. */
import pg from 'pg';
import type { FaultScenario } from './scenario.js';

export const scenario: FaultScenario = {
  name: 'pg-terminate-backends',
  description: 'pg_terminate_backend on every connection of the database, three times in a second',
  databases: ['postgres'],
  async inject(ctx) {
    const admin = new pg.Client({ connectionString: ctx.adminUrl });
    await admin.connect();
    const db = new URL(ctx.databaseUrl!).pathname.slice(1);
    let terminated = 0;
    try {
      for (let i = 0; i < 3; i++) {
        const r = await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [db],
        );
        terminated += r.rowCount ?? 0;
        await ctx.sleep(300);
      }
    } finally {
      await admin.end();
    }
    return { backends_terminated: terminated };
  },
};
