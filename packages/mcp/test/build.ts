import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The builds the tests run, brought up to date once (only what changed is compiled): `engram-mcp`
 * (bin/engram-mcp.mjs runs dist/cli.js) on the client's dist, and the server that mounts it at /mcp.
 */
export default function setup(): void {
  const script = fileURLToPath(new URL('../../server/scripts/build-if-stale.mjs', import.meta.url));
  execFileSync(process.execPath, [script], { stdio: ['ignore', 'inherit', 'inherit'] });
}
