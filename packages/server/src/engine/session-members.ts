// Each session's ids for MemoryIndex (its docs' neighbours are found by them), and a snapshot's reading of them.
import { ARRAY_BYTES, ARRAY_SLOT_BYTES, MAP_ENTRY_BYTES } from './heap-bytes.js';
import { type IndexTake, type SessionIds, STEP } from './index-take.js';
import { lowerBound } from './sorted.js';

/**
 * Each session's ids, ascending, by its name and number (MemoryIndex's interned sessions): an array of its own, or
 * a restored index's view of them (`frozen`) until the session first changes.
 */
export class SessionMembers {
  private readonly own = new Map<string, number[]>();
  /**
   * A restored index's sessions' ids (session n's at offsets[n]..offsets[n + 1]), each moved into
   * `own` when it first changes (taken[n]): a first query after a restart changes none of them.
   */
  frozen: { offsets: Int32Array; members: Float64Array; taken: Uint8Array } | null = null;
  /** Ids held, all sessions together (what a snapshot's list of them holds). */
  count = 0;

  /** A session's ids as they are (none: undefined). */
  ids(name: string, no: number | undefined): SessionIds | undefined {
    const own = this.own.get(name);
    if (own) return own;
    const f = this.frozen;
    if (!f || no === undefined || no >= f.taken.length || f.taken[no] || f.offsets[no + 1] === f.offsets[no])
      return undefined;
    return f.members.subarray(f.offsets[no]!, f.offsets[no + 1]!);
  }

  /** A session's ids as an array of its own, to change (made when none: `make`). */
  ownIds(name: string, no: number, make: true): number[];
  ownIds(name: string, no: number, make?: boolean): number[] | undefined;
  ownIds(name: string, no: number, make = false): number[] | undefined {
    const own = this.own.get(name);
    if (own) return own;
    const frozen = this.ids(name, no);
    if (!frozen && !make) return undefined;
    if (frozen) this.frozen!.taken[no] = 1;
    const ids = frozen ? Array.from(frozen) : [];
    this.own.set(name, ids);
    return ids;
  }

  /** Adds an id to a session's; returns its place among them. */
  add(name: string, no: number, id: number): { ids: readonly number[]; at: number } {
    const ids = this.ownIds(name, no, true);
    // Ids usually arrive in increasing order, so appending is the common case.
    let at = ids.length;
    if (at === 0 || ids[at - 1]! < id) ids.push(id);
    else ids.splice((at = lowerBound(ids, id)), 0, id);
    this.count++;
    return { ids, at };
  }

  /** Takes an id out of a session's; true when none is left. */
  delete(name: string, no: number, id: number): boolean {
    const ids = this.ownIds(name, no);
    if (!ids) return true;
    const i = lowerBound(ids, id);
    if (ids[i] === id) {
      ids.splice(i, 1);
      this.count--;
    }
    if (ids.length === 0) this.own.delete(name);
    return ids.length === 0;
  }

  /** Before a session's ids change: a snapshot being taken keeps them as they are, if it has yet to read them. */
  keep(take: IndexTake, name: string, no: number | undefined): void {
    if (no === undefined || no >= take.names.length || no < take.sessionsRead || take.sessions.has(no)) return;
    take.sessions.set(no, this.ids(name, no)?.slice());
  }

  /** A step of MemoryIndex.snapshotSteps: the ids of the next sessions, as they were when it began. */
  write(take: IndexTake, offsets: Int32Array, members: Float64Array): void {
    let n = take.sessionsRead;
    for (let work = 0; n < take.names.length && work < STEP; n++) {
      const ids = (take.sessions.has(n) ? take.sessions.get(n) : this.ids(take.names[n]!, n)) ?? [];
      if (offsets[n]! + ids.length > members.length) throw new Error('index snapshot does not add up');
      members.set(ids, offsets[n]!);
      offsets[n + 1] = offsets[n]! + ids.length;
      work += 1 + ids.length;
    }
    take.sessionsRead = n;
  }

  /** Bytes held (heap-bytes.ts): each session's ids (a growing array: ~1.5 slots an id), the frozen ones. */
  approxBytes(): number {
    const f = this.frozen;
    return (
      this.own.size * (MAP_ENTRY_BYTES + ARRAY_BYTES) +
      this.count * ARRAY_SLOT_BYTES * 1.5 +
      (f ? f.offsets.byteLength + f.members.byteLength + f.taken.byteLength : 0)
    );
  }
}
