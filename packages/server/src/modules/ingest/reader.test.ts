import { expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { DocumentReader } from './reader.js';

it('a read arriving while an idle reader is being ended gets another reader, not the ending one', async () => {
  // Idle readers end at once, so the second read comes between the idle reader's kill and its exit.
  const reader = new DocumentReader(loadConfig({}).parse, 0);
  try {
    const text = Buffer.from('The warehouse keeps forty crates of tiles.');
    expect((await reader.read(text, 'notes.txt', 'text/plain', 'wait')).chunks.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const again = await reader.read(text, 'notes.txt', 'text/plain', 'wait');
    expect(again.chunks.length).toBeGreaterThan(0);
  } finally {
    await reader.close();
  }
});
