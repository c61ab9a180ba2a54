import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { createProject } from '../modules/org/service.js';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';

forEachDialect('engram export / engram import against a running server', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);
  let url: string;
  const dir = mkdtempSync(join(tmpdir(), 'engram-cli-'));

  beforeAll(async () => {
    url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const items = Array.from({ length: 40 }, (_, i) => ({ text: `cli memory ${i}`, tags: ['cli'] }));
    const added = await t.call('POST', '/memory/bulk-add', { body: items, endUser: 'cli-user' });
    expect(added.status).toBe(200);
    const [first, second] = added.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    const related = await t.call('POST', '/memory/relations', {
      endUser: 'cli-user',
      body: { source_id: second, target_id: first, type: 'follows' },
    });
    expect(related.status, related.text).toBe(201);
  });

  it('exports to a file (plain progress lines off a terminal), then imports it into another project, relations included', async () => {
    const out = join(dir, 'export.jsonl.gz');
    const exported = await t.cli(
      'export',
      '--url',
      url,
      '--token',
      owner.token,
      '--project',
      t.projectId,
      '--gzip',
      '--include',
      'relations',
      '-o',
      out,
    );
    expect(exported.stderr).toMatch(/^export \d+: (100% )?40\/40 rows$/m);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(
      new RegExp(`^${out.replace(/[.]/g, '\\.')}: 40 memories, \\d+ bytes, sha256 [0-9a-f]{64}\\n$`),
    );
    expect(readFileSync(out).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));

    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'CLI target', slug: 'cli-target' })
    ).id;
    const imported = await t.cli('import', out, '--url', url, '--token', owner.token, '--project', target);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/^import \d+: 40 created, 0 already present; relations: 1 restored, 0 skipped\n$/);
    const rows = await t.database.db.selectFrom('memories').select('text').where('project_id', '=', target).execute();
    expect(rows.map((r) => r.text).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `cli memory ${i}`).sort());
  });

  it('reports a failed import with the record number, and a missing token, with exit code 1', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify([
        { id: 'a', memory: 'fine', user_id: 'u' },
        { id: 'b', memory: 'no user' },
      ]),
    );
    const failed = await t.cli('import', bad, '--url', url, '--token', owner.token, '--project', t.projectId);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/record 2 \(line 1\): user_id: user_id is required/);
    const noToken = await t.cli('export', '--url', url, '--project', t.projectId);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/--token or ENGRAM_TOKEN/);
  });
});
