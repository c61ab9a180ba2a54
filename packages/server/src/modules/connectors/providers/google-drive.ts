import { Type, type Static } from '@sinclair/typebox';
import type { OutboundResponse } from '../../../core/outbound.js';
import { jsonOf, vendorRequest } from './http.js';
import {
  ConsentRevoked,
  ProviderConfigError,
  type ConnectorProvider,
  type SourceAccess,
  type SyncEnd,
  type SyncRun,
} from './provider.js';

/**
 * Google Drive (API v3). The first sync takes `changes.getStartPageToken`, then lists the chosen
 * folders (and their subfolders) with `files.list`; it is complete, so files no longer there are
 * forgotten. Later syncs read only `changes.list` from the saved page token: a removed or trashed
 * file, or one moved out of the folders, is forgotten; a new or changed one is read again. Google
 * Docs, Sheets and Slides are exported as text (`files.export`), other files downloaded
 * (`alt=media`) and read by the upload pipeline. A file's `version` decides whether it changed.
 */

const Config = Type.Object(
  {
    folder_ids: Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' }), {
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
      description: 'Drive folder ids (the last part of the folder URL)',
    }),
    recursive: Type.Boolean({ default: true, description: 'Read subfolders too' }),
    page_size: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 100,
      description: 'Files per files.list / changes.list page',
    }),
  },
  { additionalProperties: false },
);
type Config = Static<typeof Config>;

const API = 'https://www.googleapis.com/drive/v3';
const FOLDER = 'application/vnd.google-apps.folder';
/** Google's own formats and what they are exported as. */
const EXPORTS: Record<string, { mime: string; ext: string }> = {
  'application/vnd.google-apps.document': { mime: 'text/plain', ext: 'txt' },
  'application/vnd.google-apps.presentation': { mime: 'text/plain', ext: 'txt' },
  'application/vnd.google-apps.spreadsheet': { mime: 'text/csv', ext: 'csv' },
};
const FILE_FIELDS = 'id,name,mimeType,parents,trashed,version,modifiedTime,size,webViewLink';
const MAX_FILE_BYTES = 50 * 1024 * 1024;

interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  parents?: string[];
  trashed?: boolean;
  version?: string;
  modifiedTime?: string;
  size?: string;
  webViewLink?: string;
}
interface Cursor {
  page_token: string;
  folders: string[];
}

// Google answers rate limits as 429, or as 403 with reason rateLimitExceeded / userRateLimitExceeded.
const rateLimited = (r: OutboundResponse) =>
  r.status === 403 && /"(rateLimitExceeded|userRateLimitExceeded)"/.test(r.body.toString('utf8'));

async function request(
  access: SourceAccess,
  path: string,
  query: Record<string, string | number | undefined> = {},
): Promise<OutboundResponse> {
  const url = access.endpoint(`${API}${path}`);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  for (let attempt = 0; ; attempt++) {
    const token = await access.oauth!.accessToken();
    const response = await vendorRequest(
      access,
      url,
      { headers: { authorization: `Bearer ${token}` }, maxBytes: MAX_FILE_BYTES },
      rateLimited,
    );
    if (response.status !== 401) return response;
    if (attempt > 0) throw new ConsentRevoked('Google Drive refused the access token after a refresh');
    await access.oauth!.refresh();
  }
}

async function json(
  access: SourceAccess,
  path: string,
  query: Record<string, string | number | undefined> = {},
): Promise<any> {
  const response = await request(access, path, query);
  const body = jsonOf(response, `Google Drive ${path}`);
  if (response.status === 200) return body;
  const message = body?.error?.message ?? `HTTP ${response.status}`;
  if (response.status === 404) throw new ProviderConfigError(`Google Drive: ${message}`, 'config/folder_ids');
  if (response.status === 403) throw new ProviderConfigError(`Google Drive refused: ${message}`, 'config');
  throw new Error(`Google Drive ${path} answered ${response.status}: ${message}`);
}

/** Every file (not folder) under the folders, pages saved as checkpoints; answers the folders seen. */
async function listFolders(
  run: SyncRun,
  config: Config,
  state: { queue: string[]; folders: string[]; page?: string },
  onFile: (f: DriveFile) => Promise<void>,
  save: (s: typeof state) => Promise<void>,
) {
  while (state.queue.length) {
    const folder = state.queue[0]!;
    do {
      const page = await json(run, '/files', {
        q: `'${folder}' in parents and trashed = false`,
        fields: `nextPageToken,files(${FILE_FIELDS})`,
        pageSize: config.page_size ?? 100,
        pageToken: state.page,
        supportsAllDrives: 'true',
        includeItemsFromAllDrives: 'true',
        orderBy: 'name',
      });
      for (const file of page.files as DriveFile[]) {
        if (file.mimeType === FOLDER) {
          if (config.recursive !== false && !state.folders.includes(file.id)) {
            state.folders.push(file.id);
            state.queue.push(file.id);
          }
        } else await onFile(file);
      }
      state.page = page.nextPageToken;
      if (state.page) await save(state);
    } while (state.page);
    state.queue.shift();
    await save(state);
  }
}

export const googleDrive: ConnectorProvider = {
  name: 'google_drive',
  title: 'Google Drive',
  description:
    'Reads the files of chosen Google Drive folders: Google Docs, Sheets and Slides as text, other files through the upload pipeline.',
  authKind: 'oauth2',
  configSchema: Config,
  credentialsSchema: null,
  capabilities: ['oauth2', 'incremental', 'deletions', 'resumable', 'rate_limits'],
  oauth: {
    authorizeUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    scopes: ['https://www.googleapis.com/auth/drive.readonly'],
    scopeSeparator: ' ',
    pkce: true,
    // offline: a refresh token; consent: a new one on every consent (Google sends it only then).
    authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
  },

  async validate(access) {
    for (const id of (access.config as Config).folder_ids) {
      const folder = await json(access, `/files/${encodeURIComponent(id)}`, {
        fields: 'id,name,mimeType,trashed',
        supportsAllDrives: 'true',
      });
      if (folder.mimeType !== FOLDER || folder.trashed)
        throw new ProviderConfigError(`${id} is not a folder (or is in the trash)`, 'config/folder_ids');
    }
  },

  async sync(run: SyncRun): Promise<SyncEnd> {
    const config = run.config as Config;
    const read = async (file: DriveFile) => {
      const version = file.version ?? file.modifiedTime ?? null;
      const exported = EXPORTS[file.mimeType];
      if (!exported && file.mimeType.startsWith('application/vnd.google-apps.')) return; // forms, drawings, shortcuts: no text
      if (Number(file.size ?? 0) > MAX_FILE_BYTES) return run.failed(file.id, `Larger than ${MAX_FILE_BYTES} bytes`);
      if (await run.unchanged(file.id, version)) return;
      const response = exported
        ? await request(run, `/files/${encodeURIComponent(file.id)}/export`, { mimeType: exported.mime })
        : await request(run, `/files/${encodeURIComponent(file.id)}`, { alt: 'media', supportsAllDrives: 'true' });
      if (response.status === 404) return run.gone(file.id);
      if (response.status !== 200) return run.failed(file.id, `Google Drive answered ${response.status}`);
      await run.object({
        sourceId: file.id,
        version,
        title: file.name,
        ...(file.webViewLink ? { url: file.webViewLink } : {}),
        name: exported ? `${file.name}.${exported.ext}` : file.name,
        mediaType: exported?.mime ?? file.mimeType,
        bytes: response.body,
      });
    };

    const cursor = run.cursor as Cursor | null;
    type Listing = { phase: 'list'; start: string; queue: string[]; folders: string[]; page?: string };
    type Changes = { phase: 'changes'; page_token: string; folders: string[] };
    const checkpoint = run.checkpoint as Listing | Changes | null;

    const fullListing = async (): Promise<SyncEnd> => {
      // The start token is taken before listing, so changes made while listing are read next time.
      const state: Listing =
        checkpoint?.phase === 'list'
          ? checkpoint
          : {
              phase: 'list',
              start: (await json(run, '/changes/startPageToken', { supportsAllDrives: 'true' })).startPageToken,
              queue: [...config.folder_ids],
              folders: [...config.folder_ids],
            };
      await listFolders(run, config, state, read, (s) => run.saveCheckpoint(s));
      return { complete: true, cursor: { page_token: state.start, folders: state.folders } satisfies Cursor };
    };
    if (!cursor || checkpoint?.phase === 'list') return fullListing();

    const folders = new Set(checkpoint?.folders ?? cursor.folders);
    let token = checkpoint?.page_token ?? cursor.page_token;
    for (;;) {
      const response = await request(run, '/changes', {
        pageToken: token,
        pageSize: config.page_size ?? 100,
        includeRemoved: 'true',
        supportsAllDrives: 'true',
        includeItemsFromAllDrives: 'true',
        fields: `nextPageToken,newStartPageToken,changes(fileId,removed,time,file(${FILE_FIELDS}))`,
      });
      // A page token Google no longer accepts: list everything again (a complete run).
      if (response.status === 400 || response.status === 404) return fullListing();
      if (response.status !== 200) throw new Error(`Google Drive /changes answered ${response.status}`);
      const page = jsonOf(response, 'Google Drive /changes');
      for (const change of page.changes as Array<{ fileId: string; removed?: boolean; file?: DriveFile }>) {
        const file = change.file;
        const inside = file?.parents?.some((p) => folders.has(p)) ?? false;
        if (change.removed || !file || file.trashed || !inside) {
          if (file?.mimeType === FOLDER) folders.delete(change.fileId);
          await run.gone(change.fileId);
        } else if (file.mimeType === FOLDER) {
          // A folder moved in: its files arrive with no change of their own, so it is listed.
          if (config.recursive !== false && !folders.has(file.id)) {
            const state = { queue: [file.id], folders: [...folders, file.id] };
            await listFolders(run, config, state, read, async () => {});
            for (const f of state.folders) folders.add(f);
          }
        } else await read(file);
      }
      if (page.nextPageToken) {
        token = page.nextPageToken;
        await run.saveCheckpoint({ phase: 'changes', page_token: token, folders: [...folders] } satisfies Changes);
        continue;
      }
      return {
        complete: false,
        cursor: { page_token: page.newStartPageToken, folders: [...folders] } satisfies Cursor,
      };
    }
  },
};
