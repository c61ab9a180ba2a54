import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ServiceClient, type Memory } from '@engram/client';
import { readmeExample, runTsExample, useAgentExample } from '../../server/src/testing/readme-example.js';

/** The root README's Vercel AI SDK example, run as written (importing the built package) against a real server and a local chat endpoint. */
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

const example = useAgentExample();

it('runs the README AI SDK example as written: a tool call stores the memory, the next call is given it', async () => {
  const llm = example.llm();
  llm.script.push(
    { toolCalls: [{ name: 'addMemory', arguments: { text: 'Is vegetarian', tags: ['food'] } }] },
    { content: 'Noted.' },
    { content: 'A mushroom risotto.' },
  );
  const { baseUrl, key, env } = await example.start();
  const stdout = await runTsExample(PACKAGE, 'chat.ts', readmeExample('### Vercel AI SDK', 'ts'), env);
  expect(stdout.trim().split('\n')).toEqual(['Noted.', 'A mushroom risotto.']);
  const http = new ServiceClient({ baseUrl, apiKey: key, endUserId: 'user-42' });
  expect(((await http.memories.list()).items as Memory[]).map((m) => [m.text, m.tags])).toEqual([
    ['Is vegetarian', ['food']],
  ]);
  expect(llm.requests[2]!.body.messages[0]!.role).toBe('system');
  expect(llm.requests[2]!.body.messages[0]!.content).toMatch(/\[m:\d+\] \([^)]*\) Is vegetarian/);
});
