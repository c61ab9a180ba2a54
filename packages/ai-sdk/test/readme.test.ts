import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ServiceClient, type Memory } from '@engram/client';
import { useTestApp } from '../../server/src/testing/harness.js';
import { startFakeLlm, type FakeLlm } from '../../server/src/testing/fake-llm.js';
import { readmeExample, runTsExample } from '../../server/src/testing/readme-example.js';

/** The root README's Vercel AI SDK example, run as written (importing the built package) against a real server and a local chat endpoint. */
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

const t = useTestApp('sqlite');
let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(async () => llm?.close());

it('runs the README AI SDK example as written: a tool call stores the memory, the next call is given it', async () => {
  const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  // Like the key `npm start` prints: locked to its project.
  const { key } = await t.newKey({ projectId: t.projectId });
  llm.script.push(
    { toolCalls: [{ name: 'addMemory', arguments: { text: 'Is vegetarian', tags: ['food'] } }] },
    { content: 'Noted.' },
    { content: 'A mushroom risotto.' },
  );
  const env = { ENGRAM_URL: baseUrl, ENGRAM_API_KEY: key, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: llm.baseUrl };
  const stdout = await runTsExample(PACKAGE, 'chat.ts', readmeExample('### Vercel AI SDK', 'ts'), env);
  expect(stdout.trim().split('\n')).toEqual(['Noted.', 'A mushroom risotto.']);
  const http = new ServiceClient({ baseUrl, apiKey: key, endUserId: 'user-42' });
  expect(((await http.memories.list()).items as Memory[]).map((m) => [m.text, m.tags])).toEqual([
    ['Is vegetarian', ['food']],
  ]);
  expect(llm.requests[2]!.body.messages[0]!.role).toBe('system');
  expect(llm.requests[2]!.body.messages[0]!.content).toMatch(/\[m:\d+\] \([^)]*\) Is vegetarian/);
});
