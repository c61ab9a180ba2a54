import { Type, type Static } from '@sinclair/typebox';
import { jsonOf, vendorRequest } from './http.js';
import {
  ProviderConfigError,
  type ConnectorProvider,
  type SourceAccess,
  type SourceStatement,
  type SyncRun,
} from './provider.js';

/**
 * Meeting notes from Granola's public API (docs.granola.ai): `GET /v1/notes` pages through the
 * notes (cursor, `hasMore`), each note's `updated_at` is its version, and a changed note is read
 * whole with `GET /v1/notes/{id}?include=transcript`. The note's summary becomes memories (one per
 * paragraph group) at the meeting's time; the transcript one memory per speaker turn (consecutive
 * segments of one speaker joined), at the turn's start time. Every sync lists all notes, so a
 * deleted note is forgotten. Authentication is a workspace API key (Bearer).
 */

const Config = Type.Object(
  {
    created_after: Type.Optional(
      Type.String({ format: 'date', description: 'Only meetings created on or after this date (YYYY-MM-DD)' }),
    ),
    include_transcript: Type.Boolean({
      default: true,
      description: 'Remember the transcript turns too, not only the summary',
    }),
    page_size: Type.Integer({ minimum: 1, maximum: 30, default: 30 }),
  },
  { additionalProperties: false },
);
type Config = Static<typeof Config>;

const Credentials = Type.Object(
  {
    api_key: Type.String({
      minLength: 8,
      maxLength: 256,
      description: 'A Granola API key (grn_…): Settings → API in the Granola app',
    }),
  },
  { additionalProperties: false },
);

const API = 'https://public-api.granola.ai/v1';
const SUMMARY_CHARS = 2000;

interface NoteSummary {
  id: string;
  title?: string | null;
  created_at: string;
  updated_at?: string;
}
interface TranscriptSegment {
  speaker?: { source?: string; diarization_label?: string } | null;
  speaker_source?: string;
  text?: string;
  start_time?: string;
  end_time?: string;
}
interface Note extends NoteSummary {
  owner?: { name?: string | null; email?: string };
  calendar_event?: { event_title?: string | null; scheduled_start_time?: string | null } | null;
  attendees?: Array<{ name?: string | null; email?: string }>;
  summary_text?: string | null;
  summary_markdown?: string | null;
  transcript?: TranscriptSegment[] | null;
}

async function call(
  access: SourceAccess,
  path: string,
  query: Record<string, string | number | undefined> = {},
): Promise<any> {
  const url = access.endpoint(`${API}${path}`);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  const apiKey = String((access.credentials as { api_key: string }).api_key);
  const response = await vendorRequest(access, url, {
    headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' },
    maxBytes: 20 * 1024 * 1024,
  });
  if (response.status === 401 || response.status === 403)
    throw new ProviderConfigError('Granola refused the API key', 'credentials');
  if (response.status === 404) return null;
  if (response.status !== 200) throw new Error(`Granola ${path} answered ${response.status}`);
  return jsonOf(response, `Granola ${path}`);
}

/** The summary in paragraph groups of at most SUMMARY_CHARS characters. */
function summaryParts(summary: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (const paragraph of summary
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)) {
    if (current && current.length + paragraph.length + 2 > SUMMARY_CHARS) {
      parts.push(current);
      current = '';
    }
    current = current ? `${current}\n\n${paragraph}` : paragraph;
  }
  if (current) parts.push(current);
  return parts;
}

function statementsOf(note: Note, includeTranscript: boolean): SourceStatement[] {
  const meeting = {
    note_id: note.id,
    title: note.title ?? null,
    meeting_at: note.calendar_event?.scheduled_start_time ?? note.created_at,
    attendees: (note.attendees ?? [])
      .slice(0, 50)
      .map((a) => a.name || a.email)
      .filter(Boolean),
  };
  const sessionId = `granola:${note.id}`;
  const summary = note.summary_markdown || note.summary_text || '';
  const statements: SourceStatement[] = summaryParts(summary).map((text, i) => ({
    text,
    time: meeting.meeting_at,
    sessionId,
    metadata: { granola: { ...meeting, kind: 'summary', part: i } },
  }));
  if (!includeTranscript) return statements;
  // The microphone is the note's owner; everyone else reaches Granola through the speakers.
  const speakerOf = (s: TranscriptSegment) => {
    const source = s.speaker?.source ?? s.speaker_source;
    if (source === 'microphone') return note.owner?.name || note.owner?.email || 'Me';
    return s.speaker?.diarization_label || 'Other participant';
  };
  let turn: { speaker: string; text: string; start: string; end?: string } | undefined;
  const flush = () => {
    if (!turn) return;
    statements.push({
      text: turn.text,
      time: turn.start,
      speaker: turn.speaker,
      sessionId,
      metadata: { granola: { ...meeting, kind: 'transcript', start_time: turn.start, end_time: turn.end ?? null } },
    });
    turn = undefined;
  };
  for (const segment of note.transcript ?? []) {
    const text = (segment.text ?? '').trim();
    if (!text) continue;
    const speaker = speakerOf(segment);
    if (turn && turn.speaker === speaker && turn.text.length + text.length < SUMMARY_CHARS) {
      turn.text = `${turn.text} ${text}`;
      turn.end = segment.end_time ?? turn.end;
    } else {
      flush();
      turn = {
        speaker,
        text,
        start: segment.start_time ?? meeting.meeting_at,
        ...(segment.end_time ? { end: segment.end_time } : {}),
      };
    }
  }
  flush();
  return statements;
}

export const granola: ConnectorProvider = {
  name: 'granola',
  title: 'Granola (meeting notes)',
  description:
    "Reads Granola meeting notes: each note's summary and its transcript, turn by turn, with speakers and times.",
  authKind: 'api_key',
  configSchema: Config,
  credentialsSchema: Credentials,
  capabilities: ['incremental', 'deletions', 'resumable', 'rate_limits'],

  async validate(access) {
    await call(access, '/notes', { page_size: 1 });
  },

  async sync(run: SyncRun) {
    const config = run.config as Config;
    let cursor = (run.checkpoint as { cursor?: string } | null)?.cursor;
    for (;;) {
      const page = await call(run, '/notes', {
        page_size: config.page_size ?? 30,
        cursor,
        created_after: config.created_after,
      });
      for (const summary of (page?.notes ?? []) as NoteSummary[]) {
        const version = summary.updated_at ?? summary.created_at;
        if (await run.unchanged(summary.id, version)) continue;
        const note = (await call(
          run,
          `/notes/${encodeURIComponent(summary.id)}`,
          config.include_transcript === false ? {} : { include: 'transcript' },
        )) as Note | null;
        if (!note) continue; // deleted since it was listed: not seen, so forgotten
        await run.object({
          sourceId: note.id,
          version,
          title: note.title ?? note.id,
          statements: statementsOf(note, config.include_transcript !== false),
        });
      }
      if (!page?.hasMore || !page.cursor) return { complete: true };
      cursor = page.cursor as string;
      await run.saveCheckpoint({ cursor });
    }
  },
};
