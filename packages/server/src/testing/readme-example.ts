import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { startFakeLlm, type FakeLlm } from './fake-llm.js';
import { useTestApp } from './harness.js';

const run = promisify(execFile);
const ROOT = new URL('../../../../', import.meta.url);

/** The first code block in `language` after `heading` in the root README. */
export function readmeExample(heading: string, language: string): string {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  const found = readme.includes(heading) ? section.match(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``)) : null;
  if (!found) throw new Error(`no ${language} example after ${heading}`);
  return found[1]!;
}

/**
 * Builds a workspace package (its dist is what an import of the package name loads), then runs a README
 * example as a user's file inside it (so the package name resolves to itself, as an installed package would),
 * with tsx; answers its stdout.
 */
export async function runTsExample(
  packageDir: string,
  fileName: string,
  code: string,
  env: Record<string, string>,
): Promise<string> {
  const tsc = new URL('node_modules/typescript/bin/tsc', ROOT).pathname;
  await run(process.execPath, [tsc, '-p', join(packageDir, 'tsconfig.build.json')]);
  const dir = mkdtempSync(join(packageDir, '.readme-'));
  try {
    writeFileSync(join(dir, fileName), code);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, fileName)], {
      env: { ...process.env, ...env },
      cwd: dir,
    });
    return stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface AgentExampleServer {
  baseUrl: string;
  /** A key locked to the test project, like the one `npm start` prints. */
  key: string;
  /** What the README's agent examples read: the server, the key, and the local chat endpoint as OpenAI. */
  env: Record<string, string>;
}

/**
 * For a file that runs a README agent example: a real app on SQLite and a local OpenAI-compatible chat
 * endpoint for the file (`llm()`, script its answers before `start()`), and `start()` to listen and mint the key.
 */
export function useAgentExample(): { llm: () => FakeLlm; start: () => Promise<AgentExampleServer> } {
  const t = useTestApp('sqlite');
  let llm: FakeLlm | undefined;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(async () => llm?.close());
  const fake = () => {
    if (!llm) throw new Error('the fake chat endpoint is started in beforeAll');
    return llm;
  };
  return {
    llm: fake,
    async start() {
      const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
      const { key } = await t.newKey({ projectId: t.projectId });
      const env = {
        ENGRAM_URL: baseUrl,
        ENGRAM_API_KEY: key,
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: fake().baseUrl,
      };
      return { baseUrl, key, env };
    },
  };
}
