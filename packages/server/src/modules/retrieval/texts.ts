import { MAP_ENTRY_BYTES, stringBytes } from '../../engine/index.js';
import type { Executor } from '../../store/database.js';
import { liveTextsOf, type IndexedMemory, type Owner } from '../memories/index.js';

/** What a kept text takes: its entry in the map and the string (engine heap-bytes). */
const textBytes = (text: string): number => MAP_ENTRY_BYTES + stringBytes(text);

/**
 * The texts of an end user's memories, kept beside their index once a query filters on the text: no index keeps
 * a memory's text, and reading it for every query (a scan of the end user's rows in SQL) cost 3.3x an unfiltered
 * query at 10,000 memories. Read once, then brought up to date by the index's refreshes from the same changed rows
 * (a forgotten memory's text leaves with it), and counted in the index cache's bytes.
 */
export class IndexTexts {
  private constructor(
    private readonly byId: Map<number, string>,
    private size: number,
  ) {}

  static async read(db: Executor, owner: Owner): Promise<IndexTexts> {
    const byId = new Map<number, string>();
    let size = 0;
    for (const { id, text } of await liveTextsOf(db, owner)) {
      byId.set(id, text);
      size += textBytes(text);
    }
    return new IndexTexts(byId, size);
  }

  /** Undefined for a memory not live when the texts were read (forgotten since, which the next refresh applies). */
  get(id: number): string | undefined {
    return this.byId.get(id);
  }

  /** A row the index applied: its text, or none when it was forgotten. */
  apply(row: IndexedMemory): void {
    const before = this.byId.get(row.id);
    if (before !== undefined) this.size -= textBytes(before);
    if (row.deleted) {
      this.byId.delete(row.id);
      return;
    }
    this.byId.set(row.id, row.text);
    this.size += textBytes(row.text);
  }

  /** Bytes held (engine heap-bytes). */
  get bytes(): number {
    return this.size;
  }
}
