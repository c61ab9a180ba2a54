import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Another revision's compiled server (its dist/main.js), built once per commit from `git archive` in the
 * temp directory beside this checkout's node_modules: what a paired benchmark compares this checkout with.
 */
export function baselineMain(repoRoot: string, rev: string): { sha: string; main: string } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], {
    cwd: repoRoot,
    encoding: 'utf8',
  }).trim();
  const dir = join(tmpdir(), `engram-baseline-${sha}`);
  const main = join(dir, 'packages/server/dist/main.js');
  // existsSync follows the links: a build whose node_modules went with a removed worktree is built again.
  if (existsSync(main) && existsSync(join(dir, 'node_modules/pino'))) return { sha, main };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C "${dir}"`], { cwd: repoRoot });
  // The real directories, not a worktree's links to them, so the build outlives the worktree.
  symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(dir, 'node_modules'));
  const serverModules = join(repoRoot, 'packages/server/node_modules');
  if (existsSync(serverModules)) symlinkSync(realpathSync(serverModules), join(dir, 'packages/server/node_modules'));
  const server = join(dir, 'packages/server');
  execFileSync(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: server,
    stdio: 'inherit',
  });
  execFileSync(process.execPath, ['scripts/copy-assets.mjs'], { cwd: server, stdio: 'inherit' });
  return { sha, main };
}

/** The median of some figures. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2
    ? sorted[sorted.length >> 1]!
    : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
}
