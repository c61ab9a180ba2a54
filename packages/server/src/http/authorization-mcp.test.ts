import { beforeAll, expect, it } from 'vitest';
import { boundAgainst, expectedAnswer, forbiddenText, settle, snapshot } from '../testing/authorization-matrix.js';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { MCP_TOOLS, mcpRequest, toolAnswer } from '../testing/mcp.js';
import { DECLARATIONS } from '../testing/operations.js';
import { PROBE_CONFIG, type Place, type World } from '../testing/probe-places.js';
import { buildWorld } from '../testing/probe-world.js';
import { answerProblems, servedOperations, type ServedOperation } from '../testing/served.js';

/**
 * The authorization matrix of the MCP endpoint (POST /mcp): every tool, called with every kind of
 * credential, aimed at every place the operation it sends can be aimed at. A tool must answer exactly
 * as its operation does over HTTP (testing/authorization-matrix.ts#expectedAnswer): permitted, or a
 * tool error carrying the operation's status. What the endpoint refuses itself (no key, a dead key, a
 * token, a key outside the project, a bound key naming another end user or tenant) is that status over
 * HTTP. A refusal changes nothing, and no answer carries another place's data.
 */
forEachDialect('authorization matrix of the MCP tools (POST /mcp)', (dialect) => {
  const t = useTestApp(dialect, PROBE_CONFIG);
  let world: World;
  let operations: Map<string, ServedOperation>;
  const access = new Map<string, { scope: string | null; capability: string | null }>();

  beforeAll(async () => {
    world = await buildWorld(t);
    operations = new Map(servedOperations((await t.call('GET', '/openapi.json')).body).map((op) => [op.id, op]));
    const catalogue = await t.call('GET', '/auth/catalogue');
    for (const o of catalogue.body.operations as {
      method: string;
      path: string;
      scope: string | null;
      capability: string | null;
    }[]) {
      access.set(`${o.method} ${o.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`, {
        scope: o.scope,
        capability: o.capability,
      });
    }
  });

  it('declares every tool the endpoint lists, each sending a served operation', async () => {
    const owner = world.credentials.find((c) => c.name === 'unbound key with every scope')!;
    const listed = await mcpRequest(t, { ...owner.headers, 'x-end-user-id': 'alice' }, 'tools/list', {});
    expect(listed.status).toBe(200);
    const names = (listed.body.result.tools as { name: string }[]).map((tool) => tool.name).sort();
    expect(names).toEqual(Object.keys(MCP_TOOLS).sort());
    for (const [name, tool] of Object.entries(MCP_TOOLS))
      expect(operations.has(tool.operation), `${name} sends ${tool.operation}`).toBe(true);
  });

  it('answers every tool, for every credential and target, as its operation does, and refusals change nothing', async () => {
    const failures: string[] = [];
    let cells = 0;
    for (const [name, tool] of Object.entries(MCP_TOOLS)) {
      const op = operations.get(tool.operation)!;
      const d = DECLARATIONS[tool.operation]!;
      const places: Place[] = ['own', ...(Object.keys(d.targets ?? {}) as Place[])];
      for (const c of world.credentials) {
        for (const place of places) {
          const want = expectedAnswer(op, access.get(tool.operation)!, d, c, place);
          // Refused by the endpoint before any tool runs: authentication, and the scope headers against the key's bindings.
          const namedInHeaders = place !== 'own' && d.targets?.[place] === 'named';
          const atEndpoint =
            c.kind !== 'api_key' || !!c.dead || !!c.outsideProject || (namedInHeaders && boundAgainst(c, place));
          const built = await tool.build(world, place, c);
          const batch = want.status < 400;
          if (want.refused) await settle(t.database);
          const before = want.refused ? await snapshot(t.database, !batch) : '';
          const res = await mcpRequest(t, { ...built.headers, ...c.headers }, 'tools/call', {
            name,
            arguments: built.args,
          });
          cells++;
          const cell = `${name} (${tool.operation}) as ${c.name} on ${place}`;
          const answer = res.status === 200 ? toolAnswer(res) : {};
          if (atEndpoint) {
            if (res.status !== want.status)
              failures.push(
                `${cell}: HTTP ${res.status} (expected ${want.status} from the endpoint) ${res.text.slice(0, 160)}`,
              );
            for (const problem of answerProblems(res)) failures.push(`${cell}: ${problem}`);
          } else if (res.status !== 200 || answer.rpcError || !answer.result) {
            failures.push(`${cell}: HTTP ${res.status}, not a tool result ${res.text.slice(0, 160)}`);
          } else if (want.status >= 400) {
            const status = typeof answer.error === 'object' ? answer.error.status : undefined;
            if (!answer.result.isError || status !== want.status)
              failures.push(
                `${cell}: ${answer.result.isError ? `tool error ${status}` : 'permitted'} (expected a tool error ${want.status}) ${res.text.slice(0, 160)}`,
              );
          } else if (answer.result.isError) {
            failures.push(`${cell}: tool error (expected ${want.status}) ${res.text.slice(0, 160)}`);
          }
          for (const text of forbiddenText(c, place, d)) {
            if (res.text.includes(text)) failures.push(`${cell}: the answer carries data of another place (${text})`);
          }
          if (want.refused && (await snapshot(t.database, !batch)) !== before)
            failures.push(`${cell}: refused (${want.status}) but the database changed`);
        }
      }
    }
    expect(cells).toBeGreaterThan(400);
    expect(failures).toEqual([]);
  }, 300_000);
});
