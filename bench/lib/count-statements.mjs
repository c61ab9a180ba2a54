// Preloaded into a benchmark server (node --import): appends the text of every statement the
// process sends to PostgreSQL to ENGRAM_BENCH_STATEMENT_LOG, one line each, so a benchmark can
// count round trips per operation. Measurement only; never part of the product.
import { appendFileSync } from 'node:fs';
import pg from 'pg';

const file = process.env.ENGRAM_BENCH_STATEMENT_LOG;
if (file) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    if (text) appendFileSync(file, text.replace(/\s+/g, ' ').slice(0, 160) + '\n');
    return query.call(this, config, ...rest);
  };
}
