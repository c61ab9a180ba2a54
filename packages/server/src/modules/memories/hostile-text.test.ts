import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { upload } from '../../testing/files.js';
import { expectLinear } from '../../testing/linear-time.js';
import { freshUser } from '../../testing/retrieval.js';

/**
 * Memories and files of text built to make the readers backtrack or loop quadratically (docs/architecture.md, hostile
 * input): each is added and read over HTTP in time linear in its length. Before the fixes a 32,000-character memory of
 * "a, " took 5 s to query and 5 s to infer from, one of line breaks or of "?" and blanks about 1 s to query.
 */
forEachDialect('hostile text over HTTP', (dialect) => {
  const t = useTestApp(dialect, { upload: { maxBytes: 8 * 1024 * 1024, backgroundFromBytes: 4 * 1024 * 1024 } });
  const slow = { floorMs: 100 };

  /** Adds the text as a memory of a new end user, then queries and infers from it. */
  const addAndRead = async (text: string) => {
    const endUser = freshUser();
    const added = await t.call('POST', '/memory/add', { endUser, body: { text } });
    expect(added.status, added.text).toBe(201);
    const query = await t.call('POST', '/memory/query', { endUser, body: { query: text.slice(0, 4_000) } });
    expect(query.status, query.text).toBe(200);
    const inferred = await t.call('POST', '/memory/infer', {
      endUser,
      body: { messages: [{ role: 'user', content: text }] },
    });
    expect(inferred.status, inferred.text).toBe(200);
  };

  it('memories of commas, brackets, line breaks and questions are added, queried and inferred from', async () => {
    await expectLinear((n) => 'a, '.repeat(n / 3), addAndRead, slow);
    await expectLinear((n) => `"${'('.repeat(n - 2)}"`, addAndRead, slow);
    await expectLinear((n) => `!${'\n'.repeat(n - 1)}`, addAndRead, slow);
    await expectLinear((n) => `?${' '.repeat(n - 10)}[image:x`, addAndRead, slow);
  });

  it('files of long runs of blanks and of an unclosed tag are uploaded', async () => {
    const send = (name: string) => async (content: string) => {
      const res = await upload(t, { name, content }, { endUser: freshUser() });
      expect(res.status, res.text).toBe(201);
    };
    // Before: 15 s and 5 s at 128k characters.
    await expectLinear((n) => `a${' '.repeat(n)}b\nc`, send('blanks.txt'), { ...slow, n: 32_000 });
    await expectLinear((n) => `<html><body><p>hi</p><A${'-'.repeat(n)}`, send('tag.html'), { ...slow, n: 32_000 });
  });
});
