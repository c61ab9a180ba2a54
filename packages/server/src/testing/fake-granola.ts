import { startVendor, type LocalVendor } from './vendor.js';

/**
 * Granola's public API on loopback (docs.granola.ai): `GET /v1/notes` with `page_size`, `cursor`,
 * `created_after` answering `{notes, hasMore, cursor}`, `GET /v1/notes/{id}` with
 * `include=transcript`, Bearer API keys (401 otherwise), 404 for a deleted note, 429 + Retry-After.
 */

export const GRANOLA_KEY = 'grn_TestKey1234567890abcdef';

export interface FakeNote {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
  owner: { name: string; email: string };
  attendees: Array<{ name: string; email: string }>;
  summary_markdown: string;
  transcript: Array<{
    speaker: { source: 'microphone' | 'speaker'; diarization_label?: string };
    text: string;
    start_time: string;
    end_time: string;
  }>;
}

export interface FakeGranola extends LocalVendor {
  notes: FakeNote[];
  keys: Set<string>;
  /** Whether the next list call answers 429 with Retry-After: 1. */
  rateLimitNextList: boolean;
  /** Holds the next list call that carries a cursor until released. */
  holdNextPage(): { reached: Promise<void>; release(): void };
}

export async function startFakeGranola(): Promise<FakeGranola> {
  let hold: { reached: () => void; released: Promise<void> } | undefined;
  const fake = {} as FakeGranola;
  const vendor = await startVendor(async (request) => {
    if (
      (request.headers.authorization ?? '') === '' ||
      !fake.keys.has(request.headers.authorization!.replace(/^Bearer /, ''))
    ) {
      return { status: 401, json: { message: 'Unauthorized' } };
    }
    const q = request.query;
    if (request.path === '/v1/notes') {
      if (fake.rateLimitNextList) {
        fake.rateLimitNextList = false;
        return { status: 429, headers: { 'retry-after': '1' }, json: { message: 'Too many requests' } };
      }
      if (hold && q.get('cursor')) {
        const h = hold;
        hold = undefined;
        h.reached();
        await h.released;
      }
      const size = Number(q.get('page_size') ?? 10);
      const after = q.get('created_after');
      const listed = fake.notes
        .filter((n) => !after || n.created_at >= after)
        .sort((a, b) => b.created_at.localeCompare(a.created_at));
      const offset = q.get('cursor') ? Number(Buffer.from(q.get('cursor')!, 'base64url').toString()) : 0;
      const more = offset + size < listed.length;
      return {
        json: {
          notes: listed.slice(offset, offset + size).map((n) => ({
            id: n.id,
            object: 'note',
            title: n.title,
            owner: n.owner,
            created_at: n.created_at,
            updated_at: n.updated_at,
          })),
          hasMore: more,
          cursor: more ? Buffer.from(String(offset + size)).toString('base64url') : null,
        },
      };
    }
    const id = /^\/v1\/notes\/([^/]+)$/.exec(request.path)?.[1];
    const note = fake.notes.find((n) => n.id === id);
    if (!note) return { status: 404, json: { message: 'Note not found' } };
    const { transcript, ...rest } = note;
    return {
      json: {
        ...rest,
        object: 'note',
        summary_text: note.summary_markdown.replace(/[#*]/g, ''),
        calendar_event: {
          event_title: note.title,
          invitees: note.attendees.map((a) => ({ email: a.email })),
          organiser: note.owner.email,
          calendar_event_id: `evt_${note.id}`,
          scheduled_start_time: note.created_at,
          scheduled_end_time: note.updated_at,
        },
        folder_membership: [],
        ...(q.get('include') === 'transcript' ? { transcript } : {}),
      },
    };
  });
  return Object.assign(fake, vendor, {
    notes: [] as FakeNote[],
    keys: new Set([GRANOLA_KEY]),
    rateLimitNextList: false,
    holdNextPage() {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((r) => (reached = r));
      hold = { reached, released: new Promise<void>((r) => (release = r)) };
      return { reached: reachedPromise, release: () => release() };
    },
  });
}
