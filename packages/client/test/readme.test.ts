import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../../server/src/testing/harness.js';

/** The package README's example, run as written (as a user's own file importing the built package) against a real server. */
const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function exampleAfter(heading: string, language: string): string {
  const section = README.slice(README.indexOf(heading));
  const found = section.match(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``));
  if (!found) throw new Error(`no ${language} example after ${heading}`);
  return found[1]!;
}

const t = useTestApp('sqlite');

beforeAll(async () => {
  await run(process.execPath, [
    join(PACKAGE, '../../node_modules/typescript/bin/tsc'),
    '-p',
    join(PACKAGE, 'tsconfig.build.json'),
  ]);
});

it('runs the package README example as written', async () => {
  const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  // Like the key the server prints at first start: locked to its project.
  const { key } = await t.newKey({ projectId: t.projectId });
  // Inside the package, so that `@engram/client` resolves to it (self-reference), as an installed package would.
  const dir = mkdtempSync(join(PACKAGE, '.readme-'));
  try {
    const file = join(dir, 'example.ts');
    writeFileSync(file, exampleAfter('## Example: typed answers, typed errors', 'ts'));
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, ENGRAM_URL: baseUrl, ENGRAM_API_KEY: key },
      cwd: dir,
    });
    // The answer, then the ValidationError and the NotFoundError caught by their classes.
    expect(stdout.trim().split('\n')).toEqual([
      'Prefers aisle seats on long flights',
      'invalid: text',
      expect.stringMatching(/^gone: \S+/),
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
