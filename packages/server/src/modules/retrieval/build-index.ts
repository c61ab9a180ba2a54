import type { BuiltDocs, MemoryIndex } from '../../engine/index.js';
import type { Database } from '../../store/database.js';
import type { IndexedMemory, Owner } from '../memories/index.js';
import { ownerBuildPages, type BuildPage } from './build-reader.js';
import { rowAt, SHARED, type PreparedPage } from './build-rows.js';
import type { DocMetas } from './doc-metas.js';
import type { EmbeddingStore } from './embeddings.js';
import { feedbackSums } from './feedback.js';

/** Rows a page of a build from scratch reads. */
const BUILD_PAGE = 2000;

/**
 * Builds `owner`'s index and filter metadata (`into`'s, empty) from scratch: its live rows a page at a time, each
 * indexed (and dropped) before the next is taken (build-reader.ts: read on the build reader with `reader`'s rows and
 * idle cores). `awaitVector`: a row without a stored vector, when there is an embedder. Returns the rows indexed;
 * `fit` follows (it lays out the postings).
 */
export async function buildFromScratch(
  database: Database,
  embeddings: EmbeddingStore,
  owner: Owner,
  into: { index: MemoryIndex; meta: DocMetas },
  reader: { minRows: number; idleCores: number },
  awaitVector: (row: IndexedMemory) => void,
): Promise<number> {
  // Rows are read back only for the embedder (awaitVector); the cache's indexes have no built-in vectors (texts).
  const rowsRead = embeddings.embedder !== null;
  const { count, pages } = await ownerBuildPages(database, owner, BUILD_PAGE, reader, rowsRead);
  into.index.reserve(count);
  into.meta.reserve(count);
  const build = new OwnerBuild(database, embeddings, owner, into.index, into.meta);
  let built = 0;
  for await (const page of pages) {
    for (const row of await build.add(page)) awaitVector(row);
    built += page.page.ids.length;
    // Other requests wait for a large build otherwise (queries of this owner wait for the whole refresh).
    await new Promise((resolve) => setImmediate(resolve));
  }
  return built;
}

/**
 * A build from scratch of one owner's index and filter metadata from its prepared pages (build-reader.ts), a page
 * at a time as columns (MemoryIndex.addBuilt, DocMetas.addBuilt): no object a row, each term found by number. The
 * same index and metadata as each row's upsert and set give (build-index.test.ts).
 */
class OwnerBuild {
  /** The index's term ids of each numbering's terms (the reader's, this thread's: BuildPage.byReader). */
  private readonly termIds = { reader: [] as number[], here: [] as number[] };

  constructor(
    private readonly database: Database,
    private readonly embeddings: EmbeddingStore,
    private readonly owner: Owner,
    private readonly index: MemoryIndex,
    private readonly meta: DocMetas,
  ) {}

  /** Adds the page's rows; returns those without a stored vector when there is an embedder (to embed). */
  async add({ page, byReader }: BuildPage): Promise<IndexedMemory[]> {
    const ids = Array.from(page.ids);
    const [vectors, feedback] = await Promise.all([
      this.embeddings.storedVectors(this.database, ids),
      feedbackSums(this.database.db, ids, this.owner),
    ]);
    this.index.addBuilt(this.docs(page, byReader ? this.termIds.reader : this.termIds.here, vectors, feedback));
    this.meta.addBuilt(page);
    const unvectored: IndexedMemory[] = [];
    if (this.embeddings.embedder)
      for (let i = 0; i < ids.length; i++)
        if (!vectors.has(ids[i]!)) unvectored.push(rowAt(page, i, this.owner.endUserId));
    return unvectored;
  }

  /** The page as the index takes it; its terms' numbers (termIndexes) become the index's ids in place. */
  private docs(
    page: PreparedPage,
    termIds: number[],
    vectors: ReadonlyMap<number, Float32Array>,
    feedback: ReadonlyMap<number, number>,
  ): BuiltDocs {
    if (!page.prepared || page.termsFrom !== termIds.length) throw new Error('a build page out of order');
    for (const term of page.terms) termIds.push(this.index.textTermId(term));
    const terms = page.termIndexes;
    for (let j = 0; j < terms.length; j++) terms[j] = termIds[terms[j]!]!;
    const n = page.ids.length;
    const { numbers, times, sharedIndexes, sharedText, sharedJson } = page;
    const [createdAt, importance, feedbackOf] = [new Float64Array(n), new Float64Array(n), new Float64Array(n)];
    const sessions = new Int32Array(n);
    const speakerTagsOf = new Int32Array(n);
    const sessionNames: string[] = [];
    const speakerTags: string[] = [];
    // A shared text's number among the page's sessions, and a (speaker, tags) pair's among its texts (-1: none yet).
    const sessionNo = new Int32Array(sharedText.length).fill(-1);
    const speakerTagsNo = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      createdAt[i] = times[4 * i]!;
      importance[i] = numbers[3 * i]!;
      feedbackOf[i] = feedback.get(page.ids[i]!) ?? 0;
      const session = sharedIndexes[SHARED * i + 3]!;
      if (sharedText[session] === null) sessions[i] = -1;
      else {
        if (sessionNo[session]! < 0) sessionNo[session] = sessionNames.push(sharedText[session]!) - 1;
        sessions[i] = sessionNo[session]!;
      }
      const [speaker, tags] = [sharedIndexes[SHARED * i + 4]!, sharedIndexes[SHARED * i]!];
      const pair = speaker * sharedJson.length + tags;
      let no = speakerTagsNo.get(pair);
      if (no === undefined) {
        const text = [sharedText[speaker] ?? '', ...(JSON.parse(sharedJson[tags]!) as string[])].join(' ');
        speakerTagsNo.set(pair, (no = speakerTags.push(text) - 1));
      }
      speakerTagsOf[i] = no;
    }
    return {
      ids: page.ids,
      texts: page.texts,
      createdAt,
      importance,
      feedback: feedbackOf,
      flags: page.flags,
      terms,
      termEnds: page.termEnds,
      sessions,
      sessionNames,
      speakerTagsOf,
      speakerTags,
      vectors,
    };
  }
}
