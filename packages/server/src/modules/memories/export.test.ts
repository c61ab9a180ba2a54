import { beforeAll, expect, it } from 'vitest';
import { createProject } from '../../modules/org/service.js';
import { forEachDialect, type CallOptions, useTestApp } from '../../testing/harness.js';
import { addMemory, expectError } from '../../testing/memories.js';

interface Exported {
  principal: Record<string, unknown>;
  generated_at: string;
  memories: Array<{ id: number; end_user_id: string; text: string }>;
}

forEachDialect('GET /memory/export', (dialect) => {
  const t = useTestApp(dialect);
  /** Every memory created, by id, as the API answered at creation. */
  const created = new Map<number, Record<string, unknown>>();
  const forgotten: number[] = [];

  async function fill(endUser: string, count: number): Promise<void> {
    for (let start = 0; start < count; start += 50) {
      const items = Array.from({ length: Math.min(50, count - start) }, (_, i) => ({
        text: `${endUser} memory ${start + i}`,
        tags: [`n${(start + i) % 7}`],
        metadata: { n: start + i, quote: 'say "hi"\n' },
      }));
      const res = await t.call('POST', '/memory/bulk-add', { body: items, endUser });
      expect(res.status).toBe(200);
      for (const r of res.body.results) created.set(r.memory.id, r.memory);
    }
  }

  beforeAll(async () => {
    await fill('exp-a', 1_050);
    await fill('exp-b', 60);
    // Forgotten memories drop out, including one on the first page boundary.
    const ids = [...created.keys()].sort((a, b) => a - b);
    forgotten.push(ids[0]!, ids[499]!, ids[500]!, ids[1_000]!);
    const res = await t.call('DELETE', '/memory/forget', { body: { ids: forgotten }, endUser: 'exp-a' });
    expect(res.body).toHaveLength(4);
    for (const id of forgotten) created.delete(id);
    // Memories outside the project: another organization's, and another project of this organization.
    const other = await t.otherTenant();
    await addMemory(t, 'Other organization memory', { key: other.key, project: other.projectId, endUser: 'exp-a' });
    const sibling = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Sibling',
      slug: 'sibling',
    });
    await addMemory(t, 'Sibling project memory', { project: sibling.id, endUser: 'exp-a' });
  }, 120_000);

  async function exported(options: CallOptions = {}): Promise<Exported> {
    const res = await t.call('GET', '/memory/export', { endUser: null, ...options });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
    return JSON.parse(res.text) as Exported;
  }

  const expectedFor = (endUser?: string) =>
    [...created.values()]
      .filter((m) => !endUser || m.end_user_id === endUser)
      .sort((a, b) => Number(a.id) - Number(b.id));

  it('streams every live memory of the project across pages, complete, in id order, as valid JSON', async () => {
    const body = await exported();
    expect(body.principal).toEqual({
      organization_id: t.organizationId,
      project_id: t.projectId,
      api_key_id: t.keyId,
      tenant_id: null,
      end_user_id: null,
    });
    expect(body.generated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(body.memories).toHaveLength(1_050 + 60 - 4);
    expect(body.memories).toEqual(expectedFor());
    const ids = body.memories.map((m) => m.id);
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
    for (const id of forgotten) expect(ids).not.toContain(id);
  });

  it('narrows to the end user named by X-End-User-ID', async () => {
    const body = await exported({ endUser: 'exp-b' });
    expect(body.principal).toMatchObject({ project_id: t.projectId, end_user_id: 'exp-b' });
    expect(body.memories).toEqual(expectedFor('exp-b'));
    expect((await exported({ endUser: 'nobody-here' })).memories).toEqual([]);
  });

  it('narrows to the end user a key is bound to, and refuses another end user with 404', async () => {
    const bound = await t.newKey({ endUserId: 'exp-b', scopes: ['memories:read'] });
    const body = await exported({ key: bound.key });
    expect(body.principal).toMatchObject({ api_key_id: bound.id, end_user_id: 'exp-b' });
    expect(body.memories).toEqual(expectedFor('exp-b'));
    expectError(await t.call('GET', '/memory/export', { key: bound.key, endUser: 'exp-a' }), 404, 'not_found');
  });

  it('uses the project of a project-locked key without X-Project-ID', async () => {
    const locked = await t.newKey({ projectId: t.projectId });
    const body = await exported({ key: locked.key, project: null });
    expect(body.memories.length).toBe(1_050 + 60 - 4);
  });

  it('answers an empty list for a project without memories', async () => {
    const empty = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Empty',
      slug: 'empty',
    });
    const body = await exported({ project: empty.id });
    expect(body).toMatchObject({ principal: { project_id: empty.id }, memories: [] });
  });

  it('refuses without credentials, without the read scope, and with an e-mail-like end user', async () => {
    const writer = await t.newKey({ scopes: ['memories:write'] });
    expectError(await t.call('GET', '/memory/export', { key: null, endUser: null }), 401, 'unauthenticated');
    expectError(await t.call('GET', '/memory/export', { key: writer.key, endUser: null }), 403, 'forbidden');
    expectError(
      await t.call('GET', '/memory/export', { endUser: 'exp@example.com' }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
  });

  // Last: it adds tenant memories, which the whole-project export above must not count.
  it('keeps to the tenant: an end user is one end user of one tenant, and a tenant-bound key exports only its tenant', async () => {
    const turn = (tenant: string, user: string, text: string) =>
      t.call('POST', '/v1/memory/add_turn', {
        endUser: null,
        headers: { 'X-Tenant-ID': tenant },
        body: { tenant_id: tenant, user_id: user, text, speaker: 'u' },
      });
    const inAcme = await turn('acme', 'exp-b', 'exp-b said this in acme');
    expect(inAcme.status, inAcme.text).toBe(201);
    expect((await turn('globex', 'exp-b', 'exp-b said this in globex')).status).toBe(201);

    // No tenant named: exp-b's memories of no tenant only, as a read of them would answer.
    expect((await exported({ endUser: 'exp-b' })).memories).toEqual(expectedFor('exp-b'));
    const bound = await t.newKey({ endUserId: 'exp-b', scopes: ['memories:read'] });
    expect((await exported({ key: bound.key })).memories).toEqual(expectedFor('exp-b'));

    const acmeKey = await t.newKey({ tenantId: 'acme', scopes: ['memories:read'] });
    expect((await exported({ key: acmeKey.key })).memories.map((m) => m.id)).toEqual([inAcme.body.id]);
    expect((await exported({ key: acmeKey.key, endUser: 'exp-b' })).memories.map((m) => m.id)).toEqual([
      inAcme.body.id,
    ]);
    expect(
      (await exported({ endUser: 'exp-b', headers: { 'X-Tenant-ID': 'acme' } })).memories.map((m) => m.id),
    ).toEqual([inAcme.body.id]);
  });
});
