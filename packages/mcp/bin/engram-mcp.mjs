#!/usr/bin/env node
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('engram-mcp: not built yet: run `npm run build -w @engram/mcp` (in the Engram repository)\n');
  process.exit(2);
}
const { main } = await import(cli.href);
main(process.argv.slice(2), process.env).catch((error) => {
  process.stderr.write(`engram-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
