import { randomBytes } from 'node:crypto';
import { startVendor, type LocalVendor, type VendorAnswer, type VendorRequest } from './vendor.js';

/**
 * A Slack workspace on loopback speaking the Web API's wire format (api.slack.com/methods):
 * OAuth v2 (`/oauth/v2/authorize`, `oauth.v2.access` with code and refresh_token grants and token
 * rotation), `auth.test`, `conversations.list|history|replies` with cursor pagination
 * (`response_metadata.next_cursor`), `users.info`; errors as HTTP 200 `{ok:false,error}`, rate
 * limits as 429 + Retry-After. The test changes its channels and messages between syncs.
 */

export interface FakeMessage {
  ts: string;
  user: string;
  text: string;
  thread_ts?: string;
  edited?: { user: string; ts: string };
  subtype?: string;
}

export const SLACK_CLIENT = { clientId: '1234567890.0987654321', clientSecret: 'slack-client-secret-9f8e7d' };

export interface FakeSlack extends LocalVendor {
  channels: Array<{ id: string; name: string; is_private: boolean }>;
  users: Record<string, { name: string; real_name: string; display_name: string }>;
  /** channel id -> messages, oldest first (answers are newest first, as Slack's are). */
  messages: Map<string, FakeMessage[]>;
  /** Method names whose next call answers 429 with Retry-After: 1. */
  rateLimitOnce: Set<string>;
  /** Makes the live access token answer `token_expired` (rotation's 12-hour expiry). */
  expireAccessToken(): void;
  /** The user removed the app: every token answers `token_revoked`, refreshes `invalid_refresh_token`. */
  revoke(): void;
  /** Holds conversations.history of a channel until `release` is called. */
  hold(channel: string): { reached: Promise<void>; release(): void };
  /** Holds the next call of a method (`auth.test`, `oauth.v2.access` …) until `release`; it is answered as things are then. */
  holdCall(method: string): { reached: Promise<void>; release(): void };
  grants: string[];
}

const cursorOf = (offset: number) => Buffer.from(`offset:${offset}`).toString('base64');
const offsetOf = (cursor: string | null) =>
  cursor ? Number(Buffer.from(cursor, 'base64').toString().split(':')[1]) : 0;
const token = (prefix: string) => `${prefix}-${randomBytes(12).toString('hex')}`;

export async function startFakeSlack(): Promise<FakeSlack> {
  const access = new Map<string, 'live' | 'expired' | 'revoked'>();
  const refresh = new Map<string, 'live' | 'used' | 'revoked'>();
  const codes = new Map<string, string>();
  const holds = new Map<string, { reached: () => void; released: Promise<void> }>();
  const callHolds = new Map<string, { reached: () => void; released: Promise<void> }>();
  const fake = {} as FakeSlack;

  const issue = () => {
    const accessToken = token('xoxe.xoxb-1');
    const refreshToken = token('xoxe-1');
    access.set(accessToken, 'live');
    refresh.set(refreshToken, 'live');
    return {
      ok: true,
      app_id: 'A0KRD7HC3',
      authed_user: { id: 'U0ADMIN' },
      scope: 'channels:read,channels:history,groups:read,groups:history,users:read',
      token_type: 'bot',
      access_token: accessToken,
      bot_user_id: 'U0BOT',
      refresh_token: refreshToken,
      expires_in: 43_200,
      team: { id: 'T9TK3CUKW', name: 'Slack Softball Team' },
      enterprise: null,
      is_enterprise_install: false,
    };
  };

  const page = <T>(items: T[], request: VendorRequest, fallback: number) => {
    const limit = Number(request.query.get('limit') ?? fallback);
    const offset = offsetOf(request.query.get('cursor'));
    const slice = items.slice(offset, offset + limit);
    const more = offset + limit < items.length;
    return { slice, more, response_metadata: { next_cursor: more ? cursorOf(offset + limit) : '' } };
  };

  const api = async (method: string, request: VendorRequest): Promise<VendorAnswer> => {
    const held = callHolds.get(method);
    if (held) {
      callHolds.delete(method);
      held.reached();
      await held.released;
    }
    if (method === 'oauth.v2.access') {
      if (request.method !== 'POST') return { json: { ok: false, error: 'invalid_request' } };
      const { form } = request;
      if (form.get('client_id') !== SLACK_CLIENT.clientId) return { json: { ok: false, error: 'invalid_client_id' } };
      if (form.get('client_secret') !== SLACK_CLIENT.clientSecret)
        return { json: { ok: false, error: 'bad_client_secret' } };
      fake.grants.push(form.get('grant_type') ?? 'authorization_code');
      if (form.get('grant_type') === 'refresh_token') {
        const given = form.get('refresh_token') ?? '';
        if (refresh.get(given) !== 'live') return { json: { ok: false, error: 'invalid_refresh_token' } };
        refresh.set(given, 'used');
        return { json: issue() };
      }
      const redirect = codes.get(form.get('code') ?? '');
      if (redirect === undefined) return { json: { ok: false, error: 'invalid_code' } };
      codes.delete(form.get('code')!);
      if (form.get('redirect_uri') !== redirect) return { json: { ok: false, error: 'bad_redirect_uri' } };
      return { json: issue() };
    }
    const bearer = (request.headers.authorization ?? '').replace(/^Bearer /, '');
    const state = access.get(bearer);
    if (state === undefined) return { json: { ok: false, error: 'invalid_auth' } };
    if (state === 'expired') return { json: { ok: false, error: 'token_expired' } };
    if (state === 'revoked') return { json: { ok: false, error: 'token_revoked' } };
    if (fake.rateLimitOnce.delete(method)) return { status: 429, headers: { 'retry-after': '1' }, body: '' };
    const q = request.query;
    switch (method) {
      case 'auth.test':
        return {
          json: {
            ok: true,
            url: 'https://softball.slack.com/',
            team: 'Slack Softball Team',
            user: 'engram',
            team_id: 'T9TK3CUKW',
            user_id: 'U0BOT',
            bot_id: 'B0BOT',
            is_enterprise_install: false,
          },
        };
      case 'conversations.list': {
        const { slice, response_metadata } = page(fake.channels, request, 100);
        return {
          json: {
            ok: true,
            channels: slice.map((c) => ({
              ...c,
              is_channel: !c.is_private,
              is_group: false,
              is_im: false,
              is_archived: false,
              is_member: true,
              created: 1449252889,
            })),
            response_metadata,
          },
        };
      }
      case 'conversations.history': {
        const channel = q.get('channel') ?? '';
        const messages = fake.messages.get(channel);
        if (!messages) return { json: { ok: false, error: 'channel_not_found' } };
        const hold = holds.get(channel);
        if (hold && q.get('cursor')) {
          holds.delete(channel);
          hold.reached();
          await hold.released;
        }
        const top = messages
          .filter((m) => !m.thread_ts || m.thread_ts === m.ts)
          .filter((m) => !q.get('oldest') || Number(m.ts) > Number(q.get('oldest')))
          .reverse();
        const { slice, more, response_metadata } = page(top, request, 100);
        return {
          json: {
            ok: true,
            has_more: more,
            pin_count: 0,
            response_metadata,
            messages: slice.map((m) => {
              const replies = messages.filter((r) => r.thread_ts === m.ts && r.ts !== m.ts);
              return {
                type: 'message',
                ...m,
                team: 'T9TK3CUKW',
                ...(replies.length
                  ? {
                      thread_ts: m.ts,
                      reply_count: replies.length,
                      reply_users_count: new Set(replies.map((r) => r.user)).size,
                      latest_reply: replies.at(-1)!.ts,
                    }
                  : {}),
              };
            }),
          },
        };
      }
      case 'conversations.replies': {
        const messages = fake.messages.get(q.get('channel') ?? '');
        if (!messages) return { json: { ok: false, error: 'channel_not_found' } };
        const thread = messages.filter((m) => m.ts === q.get('ts') || m.thread_ts === q.get('ts'));
        if (thread.length === 0) return { json: { ok: false, error: 'thread_not_found' } };
        const { slice, more, response_metadata } = page(thread, request, 10);
        return {
          json: {
            ok: true,
            has_more: more,
            response_metadata,
            messages: slice.map((m) => ({ type: 'message', ...m, thread_ts: q.get('ts') })),
          },
        };
      }
      case 'users.info': {
        const user = fake.users[q.get('user') ?? ''];
        if (!user) return { json: { ok: false, error: 'user_not_found' } };
        return {
          json: {
            ok: true,
            user: {
              id: q.get('user'),
              team_id: 'T9TK3CUKW',
              name: user.name,
              real_name: user.real_name,
              deleted: false,
              profile: { real_name: user.real_name, display_name: user.display_name },
            },
          },
        };
      }
      default:
        return { json: { ok: false, error: 'unknown_method' } };
    }
  };

  const vendor = await startVendor(async (request) => {
    if (request.path === '/oauth/v2/authorize') {
      // The user approves: Slack redirects the browser back with a code and the state.
      const q = request.query;
      if (q.get('client_id') !== SLACK_CLIENT.clientId) return { status: 400, body: 'invalid client_id' };
      const code = token('code');
      codes.set(code, q.get('redirect_uri') ?? '');
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      return { status: 302, headers: { location: back.toString() } };
    }
    const method = /^\/api\/([a-zA-Z.0-9]+)$/.exec(request.path)?.[1];
    return method ? api(method, request) : { status: 404, body: 'not found' };
  });

  return Object.assign(fake, vendor, {
    channels: [
      { id: 'C0GENERAL', name: 'general', is_private: false },
      { id: 'C0RANDOM', name: 'random', is_private: false },
      { id: 'G0SECRET', name: 'secret-plans', is_private: true },
    ],
    users: {
      U0ALICE: { name: 'alice', real_name: 'Alice Moreau', display_name: 'Alice' },
      U0BOB: { name: 'bob', real_name: 'Bob Kowalski', display_name: '' },
    },
    messages: new Map<string, FakeMessage[]>(),
    rateLimitOnce: new Set<string>(),
    grants: [] as string[],
    expireAccessToken() {
      for (const [k, v] of access) if (v === 'live') access.set(k, 'expired');
    },
    revoke() {
      for (const k of access.keys()) access.set(k, 'revoked');
      for (const k of refresh.keys()) refresh.set(k, 'revoked');
    },
    hold(channel: string) {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((r) => (reached = r));
      holds.set(channel, { reached, released: new Promise<void>((r) => (release = r)) });
      return { reached: reachedPromise, release: () => release() };
    },
    holdCall(method: string) {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((r) => (reached = r));
      callHolds.set(method, { reached, released: new Promise<void>((r) => (release = r)) });
      return { reached: reachedPromise, release: () => release() };
    },
  });
}
