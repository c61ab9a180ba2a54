/** PostgreSQL unreachable for 3 s: the server reaches it through a TCP proxy, which is cut (connections refused, open ones reset) and restored. */
import { tcpProxy, throughProxy, type TcpProxy } from '../../packages/server/src/testing/faults.js';
import type { FaultScenario } from './scenario.js';

const OUTAGE_MS = 3000;
let proxy: TcpProxy | undefined;

export const scenario: FaultScenario = {
  name: 'pg-unreachable',
  description: `the database unreachable for ${OUTAGE_MS / 1000} s (connections refused, open ones reset)`,
  databases: ['postgres'],
  async setup(trial) {
    const direct = new URL(trial.databaseUrl!);
    const own = (proxy = await tcpProxy(direct.hostname, Number(direct.port || 5432)));
    return { databaseUrl: throughProxy(trial.databaseUrl!, own), cleanup: () => own.close() };
  },
  async inject(ctx) {
    await proxy!.cut();
    try {
      await ctx.sleep(OUTAGE_MS);
    } finally {
      await proxy!.restore();
    }
    return { outage_s: OUTAGE_MS / 1000 };
  },
};
