/** The server's role may not log in for 2 s (ALTER ROLE ... NOLOGIN, its backends terminated): a rotated or revoked credential. */
import pg from 'pg';
import type { FaultScenario } from './scenario.js';

const REFUSED_MS = 2000;
let role = '';

const asAdmin = async (url: string, statements: string[]) => {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    for (const statement of statements) await admin.query(statement);
  } finally {
    await admin.end();
  }
};

export const scenario: FaultScenario = {
  name: 'pg-role-nologin',
  description: `the server's role may not log in for ${REFUSED_MS / 1000} s, its connections terminated`,
  databases: ['postgres'],
  async setup(trial) {
    const name = new URL(trial.databaseUrl!).pathname.slice(1);
    const own = (role = `${name}_role`);
    await asAdmin(trial.adminUrl!, [`CREATE ROLE ${own} LOGIN`, `ALTER DATABASE ${name} OWNER TO ${own}`]);
    const url = new URL(trial.databaseUrl!);
    url.username = own;
    // Dropped after the trial's database (which it owns) is.
    return { databaseUrl: url.toString(), cleanup: () => asAdmin(trial.adminUrl!, [`DROP ROLE IF EXISTS ${own}`]) };
  },
  async inject(ctx) {
    const name = new URL(ctx.databaseUrl!).pathname.slice(1);
    await asAdmin(ctx.adminUrl!, [
      `ALTER ROLE ${role} NOLOGIN`,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND usename = '${role}'`,
    ]);
    try {
      await ctx.sleep(REFUSED_MS);
    } finally {
      await asAdmin(ctx.adminUrl!, [`ALTER ROLE ${role} LOGIN`]);
    }
    return { refused_s: REFUSED_MS / 1000 };
  },
};
