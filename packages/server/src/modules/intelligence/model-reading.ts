import { createHash } from 'node:crypto';
import { FairQueue } from '../../core/fair-queue.js';
import { LlmError, type LlmProvider } from '../../engine/llm/index.js';
import { factsByModel, type ModelFact } from '../../engine/nlp/index.js';
import { decodeJson, encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import { memoriesHeld, type Owner } from '../memories/index.js';

/** A memory as the reader needs it: what the model is asked about, and who "I" is in it. */
export interface ReadableMemory {
  id: number;
  text: string;
  speaker: string | null;
}

interface ToRead {
  projectId: string;
  owner: Owner;
  memory: ReadableMemory;
  hash: string;
  /** Refusals of this memory so far (READ_ATTEMPTS). */
  attempts: number;
}

/** Memories one turn of the loop asks the model about, concurrently (a call each). */
const READ_BATCH = 4;
/** Tries of a memory the model refuses (a 4xx other than 408/429) before it is left with the rules' facts alone. */
const READ_ATTEMPTS = 3;
/** The loop's pause after a failure, doubled by each failure in a row up to the most. */
const READ_BACKOFF_MS = 1000;
const READ_BACKOFF_MAX_MS = 60_000;

const refused = (error: unknown): boolean =>
  error instanceof LlmError &&
  error.status !== undefined &&
  error.status >= 400 &&
  error.status < 500 &&
  error.status !== 408 &&
  error.status !== 429;

/** The text and the speaker the facts are read from ("I" is the speaker): either changing means reading again. */
const readingHash = (m: ReadableMemory) =>
  createHash('sha256')
    .update(`${m.speaker ?? ''}\u0000${m.text}`)
    .digest('base64');

/**
 * Personal facts a configured chat model reads from each memory (engine/nlp/model-facts.ts), added to the rules'
 * (issue 53): phrasings no rule knows reach the graph, its conflicts and the current fact first. This module owns
 * memory_model_facts: a memory is read once per model (and the same text and speaker once per project), in the
 * background, so an add is as fast as without a model and its rules' facts count at once. A reading is stored only
 * while its memory is live with the text it was read from (checked under the owner's lock, as vectors are), and is
 * erased with the memory (eraseModelFacts).
 */
export class ModelFactReader {
  private readonly queue = new FairQueue<ToRead>(READ_BATCH, (item) => this.wanted(item));
  /** Memories queued or being read, by id, with the hash they were queued with (one reading each at a time). */
  private readonly pending = new Map<number, string>();
  private reading = false;
  private closed = false;
  private backoff?: NodeJS.Timeout;
  /** Memories read and stored, calls that failed (for tests and metrics). */
  readonly counts = { read: 0, failures: 0 };

  constructor(
    private readonly database: Database,
    readonly llm: LlmProvider,
    /** Told of readings stored (facts by memory id, with the text they were read from). */
    private readonly onRead: (owner: Owner, read: Map<number, { text: string; facts: ModelFact[] }>) => void,
    private readonly backoffMs = READ_BACKOFF_MS,
  ) {}

  /** The stored readings of these memories by this model, those of the memory's current text and speaker only. */
  async stored(memories: ReadableMemory[]): Promise<Map<number, ModelFact[]>> {
    const found = new Map<number, ModelFact[]>();
    const hashes = new Map(memories.map((m) => [m.id, readingHash(m)]));
    for (let i = 0; i < memories.length; i += 500) {
      const rows = await this.database.db
        .selectFrom('memory_model_facts')
        .select(['memory_id', 'text_hash', 'facts'])
        .where('model', '=', this.llm.id)
        .where(
          'memory_id',
          'in',
          memories.slice(i, i + 500).map((m) => m.id),
        )
        .execute();
      for (const r of rows) if (hashes.get(r.memory_id) === r.text_hash) found.set(r.memory_id, decodeJson(r.facts));
    }
    return found;
  }

  /** Queues these memories (of one owner) for the model; one already waiting with the same text is not queued twice. */
  want(owner: Owner, memories: ReadableMemory[]): void {
    const items: ToRead[] = [];
    for (const memory of memories) {
      const hash = readingHash(memory);
      if (this.pending.get(memory.id) === hash) continue;
      this.pending.set(memory.id, hash);
      items.push({ projectId: owner.projectId, owner, memory, hash, attempts: 0 });
    }
    if (items.length === 0 || this.closed) return;
    this.queue.push(items);
    this.readSoon();
  }

  /**
   * After an erasure committed: the owner's forgotten memories (all of a removed owner's) leave the queue now, not
   * when reached, and a reading in flight for them is not stored (the transaction checks too).
   */
  forget(owner: Owner, ids: ReadonlySet<number> | 'all'): void {
    const gone = (item: ToRead) =>
      item.owner.projectId === owner.projectId &&
      item.owner.tenantId === owner.tenantId &&
      item.owner.endUserId === owner.endUserId &&
      (ids === 'all' || ids.has(item.memory.id));
    this.queue.prune((item) => {
      if (!gone(item)) return this.wanted(item);
      if (this.wanted(item)) this.pending.delete(item.memory.id);
      return false;
    });
    if (ids !== 'all') for (const id of ids) this.pending.delete(id);
  }

  private wanted(item: ToRead): boolean {
    return this.pending.get(item.memory.id) === item.hash;
  }

  /**
   * Reads the queued memories a batch at a time, the projects in turn, and stores each reading. A failure (the
   * model or the database) puts the batch back and pauses the loop (doubled by each failure in a row); a memory the
   * model refuses READ_ATTEMPTS times keeps the rules' facts alone. The loop never throws.
   */
  private readSoon(): void {
    if (this.reading || this.closed || this.queue.empty) return;
    this.reading = true;
    void (async () => {
      // A batch lives in readNext's frame alone: nothing of a forgotten memory waits out a pause here.
      for (let pause = 0; !this.closed && !this.queue.empty; ) {
        pause = await this.readNext(pause);
        if (pause > 0) await new Promise<void>((resolve) => (this.backoff = setTimeout(resolve, pause)).unref());
      }
    })()
      .catch(() => void this.counts.failures++)
      .finally(() => {
        this.reading = false;
        this.readSoon();
      });
  }

  /** Reads the next batch; the pause to make before the next one (0 after a success). */
  private async readNext(pause: number): Promise<number> {
    const next = this.queue.next();
    if (!next || next.batch.length === 0) return 0;
    const batch = next.batch;
    let failed: ToRead[] = [];
    let error: unknown;
    try {
      const { read, unread } = await this.read(next.projectId, batch);
      failed = unread.map((u) => u.item);
      error = unread[0]?.error;
      this.counts.read += read.length;
      for (const [owner, facts] of byOwner(read)) this.onRead(owner, facts);
    } catch (caught) {
      // The database: the whole batch waits for the next try.
      failed = batch;
      error = caught;
    }
    // Done with, stored or not (a memory forgotten or changed meanwhile is queued again by its next view).
    for (const item of batch) if (!failed.includes(item) && this.wanted(item)) this.pending.delete(item.memory.id);
    if (failed.length === 0) return 0;
    this.counts.failures++;
    const again = failed.filter((item) => !refused(error) || ++item.attempts < READ_ATTEMPTS);
    for (const item of failed) if (!again.includes(item) && this.wanted(item)) this.pending.delete(item.memory.id);
    this.queue.push(again);
    return Math.min(READ_BACKOFF_MAX_MS, pause === 0 ? this.backoffMs : 2 * pause);
  }

  /**
   * One batch: a reading stored for the same text and speaker in the project is reused, the rest are asked of
   * the model (concurrently; one that fails is `unread`, the others stand); then each is stored if its memory is
   * still live with that text, under its owner's lock.
   */
  private async read(
    projectId: string,
    batch: ToRead[],
  ): Promise<{ read: Array<{ item: ToRead; facts: ModelFact[] }>; unread: Array<{ item: ToRead; error: unknown }> }> {
    const known = new Map<string, ModelFact[]>();
    const rows = await this.database.db
      .selectFrom('memory_model_facts')
      .select(['text_hash', 'facts'])
      .where('model', '=', this.llm.id)
      .where('project_id', '=', projectId)
      .where('text_hash', 'in', [...new Set(batch.map((b) => b.hash))])
      .execute();
    for (const r of rows) known.set(r.text_hash, decodeJson(r.facts));
    const answers = await Promise.allSettled(
      batch.map(async (item) => known.get(item.hash) ?? factsByModel(this.llm, item.memory.text, item.memory.speaker)),
    );
    const read: Array<{ item: ToRead; facts: ModelFact[] }> = [];
    const unread: Array<{ item: ToRead; error: unknown }> = [];
    answers.forEach((answer, i) => {
      if (answer.status === 'fulfilled') read.push({ item: batch[i]!, facts: answer.value });
      else unread.push({ item: batch[i]!, error: answer.reason });
    });
    if (read.length === 0) return { read, unread };
    const now = nowIso();
    const stored = await this.database.db.transaction().execute(async (trx) => {
      const live = new Map(
        (
          await memoriesHeld(
            this.database,
            trx,
            { projectId },
            read.map((r) => r.item.memory.id),
          )
        ).map((m) => [m.id, m.text]),
      );
      const kept = read.filter(({ item }) => live.get(item.memory.id) === item.memory.text && this.wanted(item));
      if (kept.length === 0) return kept;
      await trx
        .insertInto('memory_model_facts')
        .values(
          kept.map(({ item, facts }) => ({
            memory_id: item.memory.id,
            model: this.llm.id,
            project_id: projectId,
            text_hash: item.hash,
            facts: encodeJson(facts),
            created_at: now,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['memory_id', 'model']).doUpdateSet((eb) => ({
            text_hash: eb.ref('excluded.text_hash'),
            facts: eb.ref('excluded.facts'),
            created_at: now,
          })),
        )
        .execute();
      return kept;
    });
    return { read: stored, unread };
  }

  /** Stops the loop (the database is closing): what waits is dropped. */
  close(): void {
    this.closed = true;
    clearTimeout(this.backoff);
    this.queue.clear();
    this.pending.clear();
  }
}

function byOwner(read: Array<{ item: ToRead; facts: ModelFact[] }>) {
  const owners = new Map<string, [Owner, Map<number, { text: string; facts: ModelFact[] }>]>();
  for (const { item, facts } of read) {
    const key = `${item.owner.projectId}\u0000${item.owner.tenantId}\u0000${item.owner.endUserId}`;
    const entry = owners.get(key) ?? [item.owner, new Map()];
    entry[1].set(item.memory.id, { text: item.memory.text, facts });
    owners.set(key, entry);
  }
  return owners.values();
}

/** A forgotten memory's readings (and a rewritten summary's, read from its old text) go in the transaction that forgets it. */
export async function eraseModelFacts(trx: Executor, memoryIds: number[]): Promise<void> {
  if (memoryIds.length === 0) return;
  await trx.deleteFrom('memory_model_facts').where('memory_id', 'in', memoryIds).execute();
}
