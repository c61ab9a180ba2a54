// Preloaded into a benchmark server (node --import): appends the text of every statement the
// process sends to PostgreSQL to ENGRAM_BENCH_STATEMENT_LOG, one line each, so a benchmark can
// count round trips per operation. A statement sent while an earlier one on the same connection is
// still unanswered (pipeline mode) shares its round trip: its line starts with "+ ".
// Measurement only; never part of the product.
import { appendFileSync } from 'node:fs';
import pg from 'pg';

const file = process.env.ENGRAM_BENCH_STATEMENT_LOG;
if (file) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    const pending = this.engramPending ?? 0;
    // An empty statement is a listening connection's catch-up (store/database.ts#Watch.caughtUp): a round trip too.
    const shown = text === '' ? '(empty statement: the listening connection catching up)' : text;
    if (shown) appendFileSync(file, `${(pending > 0 ? '+ ' : '') + shown.replace(/\s+/g, ' ').slice(0, 160)}\n`);
    this.engramPending = pending + 1;
    const result = query.call(this, config, ...rest);
    const done = () => void (this.engramPending -= 1);
    if (result && typeof result.then === 'function') result.then(done, done);
    else done();
    return result;
  };
}
