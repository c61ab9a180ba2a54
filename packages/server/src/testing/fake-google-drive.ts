import { createHash, randomBytes } from 'node:crypto';
import { startVendor, type LocalVendor, type VendorAnswer, type VendorRequest } from './vendor.js';

/**
 * Google's OAuth 2.0 endpoints and the Drive API v3 on loopback, in their wire format
 * (developers.google.com/identity/protocols/oauth2/web-server, developers.google.com/drive/api/reference/rest/v3):
 * `/o/oauth2/v2/auth` (PKCE S256 checked at the token exchange), `/token` (authorization_code and
 * refresh_token grants, `invalid_grant` once revoked), `files.get|list|export`, `alt=media`,
 * `changes.getStartPageToken|list` with page tokens, 401 UNAUTHENTICATED and 429 errors in
 * Google's `{error:{code,message,errors,status}}` shape.
 */

export const GOOGLE_CLIENT = {
  clientId: '407408718192.apps.googleusercontent.com',
  clientSecret: 'GOCSPX-drive-client-secret',
};

export interface FakeDriveFile {
  id: string;
  name: string;
  mimeType: string;
  parents: string[];
  trashed?: boolean;
  /** Body of a download, or the text a Google Doc exports as. */
  content?: string | Buffer;
}

export interface FakeGoogleDrive extends LocalVendor {
  /** Creates or changes a file (bumps its version, records a change). */
  put(file: FakeDriveFile): void;
  trash(id: string): void;
  /** Deleted for good: the change says `removed`. */
  remove(id: string): void;
  /** Paths (/drive/v3/files, /drive/v3/changes …) whose next call answers 429. */
  rateLimitOnce: Set<string>;
  expireAccessTokens(): void;
  /** The user removed the app's access at myaccount.google.com. */
  revoke(): void;
  /** Holds the next changes.list call until released. */
  holdChanges(): { reached: Promise<void>; release(): void };
  grants: string[];
  /** Access tokens in the order they were issued. */
  issued: string[];
  /** The next access token issued lives 30 seconds (less than a client's refresh margin). */
  shortLivedNext: boolean;
}

const googleError = (code: number, status: string, message: string, reason: string): VendorAnswer => ({
  status: code,
  json: { error: { code, message, errors: [{ message, domain: 'global', reason }], status } },
});

export async function startFakeGoogleDrive(): Promise<FakeGoogleDrive> {
  const files = new Map<string, FakeDriveFile & { version: number; modifiedTime: string }>();
  const changes: Array<{ fileId: string; removed: boolean; time: string }> = [];
  const access = new Map<string, 'live' | 'expired' | 'revoked'>();
  const refreshTokens = new Map<string, 'live' | 'revoked'>();
  const codes = new Map<string, { redirect: string; challenge: string }>();
  let hold: { reached: () => void; released: Promise<void> } | undefined;
  let clock = Date.parse('2026-03-01T09:00:00Z');
  const fake = {} as FakeGoogleDrive;
  const metadata = (f: FakeDriveFile & { version: number; modifiedTime: string }) => ({
    kind: 'drive#file',
    id: f.id,
    name: f.name,
    mimeType: f.mimeType,
    parents: f.parents,
    trashed: f.trashed ?? false,
    version: String(f.version),
    modifiedTime: f.modifiedTime,
    webViewLink: `https://docs.google.com/document/d/${f.id}/edit`,
    ...(f.mimeType.startsWith('application/vnd.google-apps.')
      ? {}
      : { size: String(Buffer.byteLength(f.content ?? '')) }),
  });
  const record = (fileId: string, removed: boolean) =>
    changes.push({ fileId, removed, time: new Date((clock += 60_000)).toISOString() });
  const issue = (withRefresh: boolean) => {
    const accessToken = `ya29.${randomBytes(16).toString('base64url')}`;
    access.set(accessToken, 'live');
    fake.issued.push(accessToken);
    const lifetime = fake.shortLivedNext ? 30 : 3599;
    fake.shortLivedNext = false;
    const refreshToken = `1//${randomBytes(16).toString('base64url')}`;
    if (withRefresh) refreshTokens.set(refreshToken, 'live');
    return {
      access_token: accessToken,
      expires_in: lifetime,
      scope: 'https://www.googleapis.com/auth/drive.readonly',
      token_type: 'Bearer',
      ...(withRefresh ? { refresh_token: refreshToken } : {}),
    };
  };

  const token = (request: VendorRequest): VendorAnswer => {
    const form = request.form;
    if (form.get('client_id') !== GOOGLE_CLIENT.clientId || form.get('client_secret') !== GOOGLE_CLIENT.clientSecret) {
      return { status: 401, json: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    }
    fake.grants.push(form.get('grant_type') ?? '');
    if (form.get('grant_type') === 'refresh_token') {
      if (refreshTokens.get(form.get('refresh_token') ?? '') !== 'live')
        return {
          status: 400,
          json: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' },
        };
      return { json: issue(false) };
    }
    if (form.get('grant_type') !== 'authorization_code')
      return { status: 400, json: { error: 'unsupported_grant_type' } };
    const code = codes.get(form.get('code') ?? '');
    codes.delete(form.get('code') ?? '');
    if (!code || code.redirect !== form.get('redirect_uri'))
      return { status: 400, json: { error: 'invalid_grant', error_description: 'Bad Request' } };
    const verifier = form.get('code_verifier') ?? '';
    if (createHash('sha256').update(verifier).digest('base64url') !== code.challenge)
      return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid code verifier.' } };
    return { json: issue(true) };
  };

  const drive = async (path: string, request: VendorRequest): Promise<VendorAnswer> => {
    const bearer = (request.headers.authorization ?? '').replace(/^Bearer /, '');
    if (access.get(bearer) !== 'live') {
      return googleError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
      );
    }
    if (fake.rateLimitOnce.delete(path))
      return {
        ...googleError(429, 'RESOURCE_EXHAUSTED', 'Rate limit exceeded', 'rateLimitExceeded'),
        headers: { 'retry-after': '1' },
      };
    const q = request.query;
    const pageOf = <T>(items: T[]) => {
      const size = Number(q.get('pageSize') ?? 100);
      const offset = Number(q.get('pageToken') ?? 0);
      return {
        items: items.slice(offset, offset + size),
        next: offset + size < items.length ? String(offset + size) : undefined,
      };
    };
    if (path === '/drive/v3/changes/startPageToken')
      return { json: { kind: 'drive#startPageToken', startPageToken: String(changes.length + 1) } };
    if (path === '/drive/v3/changes') {
      if (hold) {
        const h = hold;
        hold = undefined;
        h.reached();
        await h.released;
      }
      // A page token is the number of the first change it reads (1-based); pages of pageSize changes.
      const from = Number(q.get('pageToken'));
      if (!(from >= 1 && from <= changes.length + 1))
        return googleError(400, 'INVALID_ARGUMENT', 'Invalid Value', 'invalid');
      const size = Number(q.get('pageSize') ?? 100);
      const slice = changes.slice(from - 1, from - 1 + size);
      const next = from - 1 + size < changes.length ? String(from + size) : undefined;
      return {
        json: {
          kind: 'drive#changeList',
          ...(next ? { nextPageToken: next } : { newStartPageToken: String(changes.length + 1) }),
          changes: slice.map((c) => {
            const file = files.get(c.fileId);
            return {
              kind: 'drive#change',
              changeType: 'file',
              time: c.time,
              removed: c.removed,
              fileId: c.fileId,
              ...(c.removed || !file ? {} : { file: metadata(file) }),
            };
          }),
        },
      };
    }
    if (path === '/drive/v3/files') {
      const parent = /^'([^']+)' in parents and trashed = false$/.exec(q.get('q') ?? '')?.[1];
      if (!parent) return googleError(400, 'INVALID_ARGUMENT', 'Invalid Value', 'invalid');
      const listed = [...files.values()]
        .filter((f) => f.parents.includes(parent) && !f.trashed)
        .sort((a, b) => a.name.localeCompare(b.name));
      const { items, next } = pageOf(listed);
      return {
        json: {
          kind: 'drive#fileList',
          incompleteSearch: false,
          ...(next ? { nextPageToken: next } : {}),
          files: items.map(metadata),
        },
      };
    }
    const match = /^\/drive\/v3\/files\/([^/]+)(\/export)?$/.exec(path);
    const file = match ? files.get(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !file) return googleError(404, 'NOT_FOUND', `File not found: ${match?.[1]}.`, 'notFound');
    if (match[2]) {
      if (!file.mimeType.startsWith('application/vnd.google-apps.'))
        return googleError(403, 'PERMISSION_DENIED', 'Export only supports Docs Editors files.', 'fileNotExportable');
      return { headers: { 'content-type': `${q.get('mimeType')}; charset=utf-8` }, body: file.content ?? '' };
    }
    if (q.get('alt') === 'media') {
      if (file.mimeType.startsWith('application/vnd.google-apps.'))
        return googleError(
          403,
          'PERMISSION_DENIED',
          'Only files with binary content can be downloaded. Use Export with Docs Editors files.',
          'fileNotDownloadable',
        );
      return { headers: { 'content-type': file.mimeType }, body: file.content ?? '' };
    }
    return { json: metadata(file) };
  };

  const vendor = await startVendor((request) => {
    if (request.path === '/o/oauth2/v2/auth') {
      const q = request.query;
      if (q.get('client_id') !== GOOGLE_CLIENT.clientId) return { status: 400, body: 'Error 401: invalid_client' };
      const back = new URL(q.get('redirect_uri')!);
      if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
        back.searchParams.set('error', 'invalid_request');
      } else {
        const code = `4/0${randomBytes(12).toString('base64url')}`;
        codes.set(code, { redirect: q.get('redirect_uri')!, challenge: q.get('code_challenge')! });
        back.searchParams.set('code', code);
        back.searchParams.set('scope', q.get('scope') ?? '');
      }
      back.searchParams.set('state', q.get('state') ?? '');
      return { status: 302, headers: { location: back.toString() } };
    }
    if (request.path === '/token' && request.method === 'POST') return token(request);
    if (request.path.startsWith('/drive/v3/')) return drive(request.path, request);
    return { status: 404, body: 'Not Found' };
  });

  return Object.assign(fake, vendor, {
    rateLimitOnce: new Set<string>(),
    grants: [] as string[],
    issued: [] as string[],
    shortLivedNext: false,
    put(file: FakeDriveFile) {
      const previous = files.get(file.id);
      files.set(file.id, {
        ...previous,
        ...file,
        version: (previous?.version ?? 0) + 1,
        modifiedTime: new Date((clock += 60_000)).toISOString(),
      });
      record(file.id, false);
    },
    trash(id: string) {
      const file = files.get(id)!;
      files.set(id, { ...file, trashed: true, version: file.version + 1 });
      record(id, false);
    },
    remove(id: string) {
      files.delete(id);
      record(id, true);
    },
    expireAccessTokens() {
      for (const [k, v] of access) if (v === 'live') access.set(k, 'expired');
    },
    revoke() {
      for (const k of access.keys()) access.set(k, 'revoked');
      for (const k of refreshTokens.keys()) refreshTokens.set(k, 'revoked');
    },
    holdChanges() {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((r) => (reached = r));
      hold = { reached, released: new Promise<void>((r) => (release = r)) };
      return { reached: reachedPromise, release: () => release() };
    },
  });
}
