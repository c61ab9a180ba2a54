import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';
import { findEntities } from './entities.js';
import { kindOf } from './fact-kinds.js';
import { tokenizeWithOffsets } from './tokens.js';

const kind = (text: string) => {
  const tokens = tokenizeWithOffsets(text);
  return kindOf(tokens, findEntities(tokens, new Map())).kind;
};

describe('the attribute-kind classifier and the changes it reads', () => {
  it('is the model the training script writes from the tuning sets', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'fact-kinds-')), 'fact-kinds.json');
    const script = new URL('../../../scripts/build-fact-kinds.ts', import.meta.url).pathname;
    execFileSync(process.execPath, ['--import', 'tsx', script, out], { stdio: 'ignore' });
    const read = (path: string | URL) => JSON.parse(readFileSync(path, 'utf8'));
    expect(read(out)).toEqual(read(new URL('./fact-kinds.json', import.meta.url)));
  }, 60_000);

  it('tells the kinds of statements apart by their words and the types of their names', () => {
    expect(kind('We rent a flat in Leeds.')).toBe('residence');
    expect(kind('She is a nurse at the county hospital.')).toBe('employer_job');
    expect(kind('My girlfriend and I got engaged.')).toBe('relationship');
    expect(kind('I turned 40 in May.')).toBe('age_birthday');
    expect(kind('Jazz is my favourite genre.')).toBe('favorite_preference');
    expect(kind('I swim every Tuesday morning.')).toBe('habit');
  });

  it('takes a statement of now of the same kind as a new value, unless it names the old one', () => {
    expect(conflicting('My favourite music is jazz.', 'Hip hop is my favourite music now.')).toBe(true);
    expect(conflicting('I live in Leeds.', "Glasgow's where we live now.")).toBe(true);
    expect(conflicting('I live in Leeds.', 'Still loving Leeds, we live near the park now.')).toBe(false);
    // A name alone is no kind: an office; nor a plan, someone else's.
    expect(conflicting('I live in Perth.', 'my office is in Sydney now')).toBe(false);
    expect(conflicting('I live in Leeds.', 'We might live in Glasgow now.')).toBe(false);
    expect(conflicting('My favourite music is jazz.', "My sister's favourite music is hip hop now.")).toBe(false);
  });
});
