// One owner's index held as session-disjoint shards (issue 51): each shard a MemoryIndex whose fields score
// with the whole's statistics (Bm25Field.stats), searched by rank.ts's phases with what is global merged
// between them, so the hits are those of one index holding every doc.
import type { Bm25Field, FieldStats } from './bm25.js';
import type { MemoryIndex } from './memory-index.js';
import { rankShards, type Shard } from './rank-search.js';
import { SearchBuffers } from './search-buffers.js';
import type { SearchHit, SearchOptions } from './types.js';

/** The whole's statistics of one field, summed over its shards' own. */
function wholeStats(fields: readonly Bm25Field[]): FieldStats {
  return {
    get docs() {
      let n = 0;
      for (const f of fields) n += f.docCount;
      return n;
    },
    get totalLen() {
      let n = 0;
      for (const f of fields) n += f.ownTotalLen;
      return n;
    },
    df(term: string) {
      let n = 0;
      for (const f of fields) n += f.ownDf(term);
      return n;
    },
  };
}

export class ShardedIndex {
  /** Each shard's search buffers: a search keeps every shard's until its last phase. */
  private buffers: SearchBuffers[];

  /** `shards`: the owner's docs split by session (a session's docs all in one). */
  constructor(readonly shards: readonly MemoryIndex[]) {
    const text = wholeStats(shards.map((s) => s.fields.text));
    const meta = wholeStats(shards.map((s) => s.fields.meta));
    for (const s of shards) {
      s.fields.text.stats = text;
      s.fields.meta.stats = meta;
    }
    this.buffers = shards.map(() => SearchBuffers.own(0));
  }

  get size(): number {
    let n = 0;
    for (const s of this.shards) n += s.size;
    return n;
  }

  search(query: string, opts: SearchOptions): SearchHit[] {
    const k = Math.floor(opts.k);
    if (!(k > 0) || this.size === 0) return [];
    // The whole's count of changes keys every shard's cached normalisations (they use the whole's lengths).
    let mutations = 0;
    for (const s of this.shards) mutations += s.fields.mutations;
    const shards: Shard[] = this.shards.map((ix, i) => {
      const cap = ix.ranked(this.buffers[i]!).capacity;
      if (this.buffers[i]!.lex.length < cap) this.buffers[i] = SearchBuffers.own(cap);
      return { ix: ix.ranked(this.buffers[i]!, mutations), b: this.buffers[i]! };
    });
    return rankShards(shards, query, opts, k);
  }
}
