import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ServiceClient, type Memory } from '@engram/client';
import { readmeExample, runTsExample, useAgentExample } from '../../server/src/testing/readme-example.js';

/** The root README's LangGraph (TypeScript) example, run as written (importing the built package) against a real server and a local chat endpoint. */
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

const example = useAgentExample();

it('runs the README LangGraph example as written: the memory it put reaches the model', async () => {
  const llm = example.llm();
  llm.script.push({ content: 'Book an aisle seat.' });
  const { baseUrl, key, env } = await example.start();
  const stdout = await runTsExample(PACKAGE, 'agent.ts', readmeExample('### LangGraph (TypeScript)', 'ts'), env);
  expect(stdout.trim()).toBe('Book an aisle seat.');
  expect(llm.requests[0]!.body.messages[0]).toEqual({
    role: 'system',
    content: 'Known about the user:\n- Prefers aisle seats on long flights',
  });
  const http = new ServiceClient({ baseUrl, apiKey: key, endUserId: 'user-42' });
  expect(((await http.memories.list()).items as Memory[]).map((m) => m.text)).toEqual([
    'Prefers aisle seats on long flights',
  ]);
});
