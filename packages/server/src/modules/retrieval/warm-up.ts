import { setImmediate as nextTurn } from 'node:timers/promises';
import { MemoryIndex, type MemoryIndexOptions, type SearchHit, snapshotCuts } from '../../engine/index.js';
import { DocMetas, NO_TAGS } from './doc-metas.js';
import { decodeMeta, SnapshotTaking } from './snapshots.js';

/**
 * The search code warmed on a small made-up index when the search thread starts (thread-worker.ts):
 * a new process otherwise runs the first search of a large end user, and the restore of its snapshot,
 * in code V8 has not optimised yet (loops over hundreds of thousands of entries interpreted, then
 * replaced mid-loop), about 0.1-0.4 s more than the same work warm (bench/README.md, "The first query
 * after a restart, session 19"). The made-up index is built, taken as a snapshot, restored from its
 * pieces and searched, as a large end user's is; it holds no one's data, and is dropped at the end.
 * A step at a time (a search, or 500 docs added), the event loop's turn between two (a call that
 * arrives meanwhile waits at most one step, ~1-5 ms), and no more once `stop` says so (the thread
 * has calls to answer: their work warms the code from then on).
 */

/** Syllables of the made-up words (nothing a stemmer or the stopword list changes). */
const SYLLABLES = ['ka', 'lo', 'mi', 'ru', 'te', 'vo', 'ni', 'sa'];
/** Docs in the made-up index, in sessions of SESSION turns: its common words hold hundreds of postings, kept as context postings. */
const DOCS = 1500;
const SESSION = 30;
/** Searches on the restored index: enough for V8 to optimise the search's loops (measured, see above). */
const SEARCHES = 24;

/** A made-up word of three syllables, by number (0-511). */
const word = (n: number) => SYLLABLES[n & 7]! + SYLLABLES[(n >> 3) & 7]! + SYLLABLES[(n >> 6) & 7]!;

/** Words by a fixed pseudo-random sequence, the low numbers far more often (as a language's common words are). */
function* words(): Generator<string, never> {
  let state = 12345;
  for (;;) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const u = (state >>> 8) / (1 << 24);
    yield word(Math.floor(512 ** u) - 1);
  }
}

/** What a search asks here: as a query of the API does without min_score (service.ts cutoffOptions). */
const SEARCH = { k: 10, requireEvidence: true, minRelevance: 0, temporal: true, explain: false };

/**
 * Builds, snapshots, restores and searches the made-up index; the hits of its last search (for its
 * test: the restored index answers as the built one), or null when stopped before.
 */
export async function warmUpSearch(
  indexOptions: MemoryIndexOptions,
  stop: () => boolean = () => false,
): Promise<{ built: SearchHit[]; restored: SearchHit[] } | null> {
  const next = words();
  const text = (n: number) => Array.from({ length: n }, () => next.next().value).join(' ');
  const index = new MemoryIndex(indexOptions);
  const metas = new DocMetas();
  const start = Date.UTC(2024, 0, 1);
  for (let id = 1; id <= DOCS; id++) {
    const sessionId = `warm-${Math.floor(id / SESSION)}`;
    const createdAt = start + id * 60_000;
    index.upsert({ id, text: `${text(6 + (id % 7))}.`, sessionId, createdAt, importance: 0.5, feedback: 0 });
    metas.set(id, {
      tags: NO_TAGS,
      source: null,
      createdAt,
      metadata: {},
      isSummary: false,
      sessionId,
      importance: 0.5,
      updatedAt: createdAt,
    });
    if (id % 500 === 0 && (await nextTurn(), stop())) return null;
  }
  index.fit();
  const queries = Array.from({ length: SEARCHES }, (_, i) =>
    i % 4 === 0 ? `When did we ${text(3)} last week?` : `What ${text(2 + (i % 3))}?`,
  );
  const now = start + DOCS * 60_000;
  const built = index.search(queries.at(-1)!, { ...SEARCH, now });
  if ((await nextTurn(), stop())) return null;
  const taken = await new SnapshotTaking(index, metas).taken;
  // In pieces, as a stored snapshot is read back (each a buffer of its own).
  const bounds = [0, ...snapshotCuts(taken.index, taken.index.length >> 2), taken.index.length];
  const pieces = bounds.slice(1).map((end, i) => Uint8Array.from(taken.index.subarray(bounds[i]!, end)));
  const restored = MemoryIndex.restore(pieces, indexOptions);
  decodeMeta(taken.meta);
  let hits: SearchHit[] = [];
  for (const query of queries) {
    if ((await nextTurn(), stop())) return null;
    hits = restored.search(query, { ...SEARCH, now });
  }
  return { built, restored: hits };
}
