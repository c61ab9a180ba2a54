import BetterSqlite3 from 'better-sqlite3';
const times = new Map<string, [number, number]>();
const origPrepare = (BetterSqlite3 as any).prototype.prepare;
(BetterSqlite3 as any).prototype.prepare = function (sql: string) {
  const t0 = performance.now();
  const stmt = origPrepare.call(this, sql);
  const key = sql.slice(0, 70);
  const rec = (d: number) => { const e = times.get(key) ?? [0, 0]; e[0] += d; e[1]++; times.set(key, e); };
  rec(performance.now() - t0);
  for (const m of ['all', 'run', 'get', 'iterate']) {
    const f = stmt[m];
    if (typeof f === 'function') stmt[m] = (...a: unknown[]) => { const t = performance.now(); try { return f.apply(stmt, a); } finally { rec(performance.now() - t); } };
  }
  return stmt;
};
await import('./prof.js');
const tot = [...times.values()].reduce((a, b) => a + b[0], 0);
console.log('total sqlite ms', tot.toFixed(0));
[...times.entries()].sort((a, b) => b[1][0] - a[1][0]).slice(0, 16).forEach(([k, [ms, n]]) => console.log(ms.toFixed(0).padStart(6), String(n).padStart(6), k));
