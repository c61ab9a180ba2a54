// A snapshot of a MemoryIndex being taken in steps: what it has read, and what changes keep for it.
import type { FieldTake } from './bm25.js';
import type { SnapshotWriter } from './snapshot.js';

/** Entries (docs' ids, sessions' ids) read or written in a step of a snapshot: well under a millisecond. */
export const STEP = 1 << 13;

/** A snapshot being taken in steps (MemoryIndex.snapshotSteps): what changes keep for it. */
export interface IndexTake {
  writer: SnapshotWriter;
  /** The docs' ids and slots in the order they were added, read a step at a time (by `idToSlot`'s iterator until done). */
  ids: Float64Array;
  slots: Int32Array;
  idsRead: number;
  entries: Iterator<[number, number]> | null;
  /** Sessions interned when it began, in order. */
  names: string[];
  /** Ids of sessions [0, names.length) changed since it began, as they were then (undefined: none). */
  sessions: Map<number, SessionIds | undefined>;
  /** Sessions [0, sessionsRead) are written. */
  sessionsRead: number;
  /** The writer's parts for the sessions' ids: where each session's begin (one more), the ids. */
  offsets: number;
  members: number;
  text: FieldTake;
  meta: FieldTake;
}

/** A session's ids, ascending: its own array, or a restored index's view of them. */
export type SessionIds = readonly number[] | Float64Array;

/** A step of snapshotSteps: the next docs' ids and slots, in the order they were added. */
export function readIds(take: IndexTake, most: number): void {
  const { ids, slots, entries } = take;
  let i = take.idsRead;
  for (const end = Math.min(ids.length, i + most); i < end; i++) {
    const [id, slot] = entries!.next().value!;
    ids[i] = id;
    slots[i] = slot;
  }
  take.idsRead = i;
  if (i === ids.length) take.entries = null;
}
