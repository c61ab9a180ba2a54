import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiLlm } from '../../engine/llm/index.js';
import { DEFAULT_ONTOLOGY, Extractor, factsByModel, parseModelFacts } from '../../engine/nlp/index.js';
import { deriveKnowledge } from './knowledge.js';

// The optional chat-model fact reader (issue 53) against a local stand-in for an OpenAI-compatible
// /chat/completions endpoint that speaks the real wire format: it answers from a table of statements.
const KEY = 'sk-test-FACTS-42';
const ANSWERS: Record<string, unknown> = {
  // Pairs the rules alone do not read (session 15 taught them "passed my driving test" and "turned into").
  "I'm lactose intolerant.": {
    facts: [
      { subject: 'I', attribute: 'is', value: 'lactose intolerant', negated: false, past: false, qualifier: null },
    ],
  },
  "Turns out I'm not lactose intolerant after all.": {
    facts: [
      { subject: 'I', attribute: 'is', value: 'lactose intolerant', negated: true, past: false, qualifier: null },
    ],
  },
  "I'm on the keto diet.": {
    facts: [{ subject: 'I', attribute: 'does', value: 'keto diet', negated: false, past: false, qualifier: null }],
  },
  "I'm off keto, it made me miserable.": {
    facts: [{ subject: 'I', attribute: 'does', value: 'keto diet', negated: true, past: false, qualifier: null }],
  },
  'My favourite genre is jazz.': {
    facts: [
      { subject: 'I', attribute: 'favorite', value: 'jazz', negated: false, past: false, qualifier: 'genre' },
      { subject: 'I', attribute: 'salary', value: 'a lot', negated: false, past: false, qualifier: null },
    ],
  },
};
const seen: Array<{ url: string; auth: string | undefined; body: any }> = [];
let server: Server;
let baseUrl = '';

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString()));
    req.on('end', () => resolve(s));
  });

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req));
    seen.push({ url: req.url ?? '', auth: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    const statement = String(body.messages.at(-1).content).replace(/^.* said: /, '');
    if (statement === 'Server error.') {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: { message: 'overloaded' } }));
      return;
    }
    const content =
      statement === 'Not JSON.' ? 'sure, here you go' : JSON.stringify(ANSWERS[statement] ?? { facts: [] });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const extractor = new Extractor(DEFAULT_ONTOLOGY);
const llm = () => openAiLlm({ baseUrl, model: 'fact-model', apiKey: KEY, maxRetries: 0 });

/** Whether the later statement conflicts with the earlier, read by the rules alone or with the model's facts too. */
async function conflicts(older: string, newer: string, withModel: boolean): Promise<number> {
  const memories = await Promise.all(
    [older, newer].map(async (text, i) => {
      const rules = extractor.extract(text);
      const extraction = withModel ? extractor.withFacts(rules, await factsByModel(llm(), text)) : rules;
      return {
        id: i + 1,
        createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
        supersededBy: null,
        isSummary: false,
        extraction,
      };
    }),
  );
  return deriveKnowledge(memories, 'user').conflicts.length;
}

describe('facts read by a chat model (optional)', () => {
  it('asks the endpoint in the chat-completions wire format, with a strict JSON schema and the bearer key', async () => {
    seen.length = 0;
    await factsByModel(llm(), "I don't drink.");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/v1/chat/completions');
    expect(seen[0]!.auth).toBe(`Bearer ${KEY}`);
    expect(seen[0]!.body.model).toBe('fact-model');
    expect(seen[0]!.body.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(seen[0]!.body.response_format.type).toBe('json_schema');
    expect(seen[0]!.body.response_format.json_schema.strict).toBe(true);
  });

  it('finds changes the rules alone miss, and the rules alone are unchanged', async () => {
    const lactose = ["I'm lactose intolerant.", "Turns out I'm not lactose intolerant after all."] as const;
    expect(await conflicts(...lactose, false)).toBe(0);
    expect(await conflicts(...lactose, true)).toBe(1);
    const keto = ["I'm on the keto diet.", "I'm off keto, it made me miserable."] as const;
    expect(await conflicts(...keto, false)).toBe(0);
    expect(await conflicts(...keto, true)).toBe(1);
    // A compatible pair stays compatible.
    expect(await conflicts("I'm lactose intolerant.", "I'm on the keto diet.", true)).toBe(0);
  });

  it("names the end user as the rules do (a turn's speaker), and keeps only what the ontology declares", async () => {
    const facts = await factsByModel(llm(), 'My favourite genre is jazz.', 'Joanna');
    // An attribute off the schema ("salary") is left out.
    expect(facts).toEqual([
      {
        subject: { name: 'Joanna', type: 'person' },
        relation: 'favorite_genre',
        object: { name: 'jazz', type: 'concept' },
        negated: false,
      },
    ]);
    const salary = { ...facts[0]!, relation: 'salary' };
    const merged = extractor.withFacts({ entities: [], relations: [], categories: [] }, [...facts, salary]);
    expect(merged.relations.map((r) => r.relation)).toEqual(['favorite_genre']);
    expect(merged.relations[0]!.singleValued).toBe(true);
  });

  it('rejects when the endpoint fails (the caller asks again later) and adds nothing off the schema', async () => {
    await expect(factsByModel(llm(), 'Server error.')).rejects.toThrow();
    expect(await factsByModel(llm(), 'Not JSON.')).toEqual([]);
    expect(parseModelFacts('{"facts":[{"subject":"I","attribute":"lives_in"}]}', null)).toEqual([]);
    expect(parseModelFacts('{"facts":"none"}', null)).toEqual([]);
  });
});
