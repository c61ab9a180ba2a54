import { describe, expect, it } from 'vitest';
import { SearchBuffers } from '../../engine/index.js';
import { warmUpSearch } from './warm-up.js';

describe('the search thread warm-up', () => {
  it('searches a made-up index restored from its snapshot, answering as the built one', async () => {
    const { built, restored } = (await warmUpSearch({ embedder: null }))!;
    expect(built.length).toBe(10);
    expect(restored.map((h) => [h.id, h.score])).toEqual(built.map((h) => [h.id, h.score]));
  });

  it('answers the same after the search buffers are readied ahead of a larger index', async () => {
    const before = (await warmUpSearch({ embedder: null }))!;
    SearchBuffers.prepare(50_000);
    const after = (await warmUpSearch({ embedder: null }))!;
    expect(after.restored.map((h) => [h.id, h.score])).toEqual(before.restored.map((h) => [h.id, h.score]));
  });

  it('stops when told to', async () => {
    let steps = 0;
    expect(await warmUpSearch({ embedder: null }, () => ++steps > 2)).toBeNull();
    expect(steps).toBe(3);
  });
});
