import { Type, type Static } from '@sinclair/typebox';
import { jsonOf, vendorRequest } from './http.js';
import {
  ConsentRevoked,
  ProviderConfigError,
  type ConnectorProvider,
  type SourceAccess,
  type SourceStatement,
  type SyncRun,
} from './provider.js';

/**
 * Slack (Web API, bot token from OAuth v2). Every sync reads the configured channels whole
 * (conversations.history, and conversations.replies for threads, cursor-paginated): Slack has no
 * change feed short of the Events API, so an edit shows as changed content and a deletion as a
 * message the complete run did not see. One object per top-level message: its thread is part of
 * it; each message is one memory with its author, channel, ts and permalink, at the message's time.
 * Errors arrive as HTTP 200 `{ok:false,error}`; rate limits as 429 + Retry-After (providers/http.ts).
 */

const Config = Type.Object(
  {
    channels: Type.Array(Type.String({ minLength: 1, maxLength: 80, pattern: '^#?[A-Za-z0-9._-]+$' }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'Channel ids (C0123ABC) or names (#general) the bot is a member of',
    }),
    oldest_days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description: 'Only messages of the last N days (default: the whole history)',
      }),
    ),
    include_threads: Type.Boolean({
      default: true,
      description: 'Read thread replies (one conversations.replies call per thread)',
    }),
    page_size: Type.Integer({ minimum: 1, maximum: 999, default: 200, description: 'Messages per history page' }),
  },
  { additionalProperties: false },
);
type Config = Static<typeof Config>;

const API = 'https://slack.com/api/';
/** Errors meaning the token no longer stands for a consent. */
const REVOKED = new Set([
  'invalid_auth',
  'not_authed',
  'token_revoked',
  'account_inactive',
  'no_permission',
  'team_access_not_granted',
]);
/** Message subtypes that are not something someone said. */
const SKIPPED = new Set([
  'channel_join',
  'channel_leave',
  'channel_topic',
  'channel_purpose',
  'channel_name',
  'channel_archive',
  'channel_unarchive',
  'group_join',
  'group_leave',
  'tombstone',
  'bot_add',
  'bot_remove',
  'pinned_item',
  'unpinned_item',
]);

interface SlackMessage {
  type?: string;
  subtype?: string;
  ts: string;
  thread_ts?: string;
  user?: string;
  username?: string;
  bot_id?: string;
  bot_profile?: { name?: string };
  text?: string;
  reply_count?: number;
  edited?: { ts: string; user?: string };
}
interface Channel {
  id: string;
  name: string;
}

/** Calls a Web API method; an error named in `tolerated` answers null instead of failing. */
async function call(
  access: SourceAccess,
  method: string,
  params: Record<string, string | number | undefined> = {},
  tolerated: string[] = [],
): Promise<any> {
  const url = access.endpoint(`${API}${method}`);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  for (let attempt = 0; ; attempt++) {
    const token = await access.oauth!.accessToken();
    const response = await vendorRequest(access, url, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      maxBytes: 20 * 1024 * 1024,
    });
    if (response.status === 401 && attempt === 0) {
      await access.oauth!.refresh();
      continue;
    }
    if (response.status >= 500) throw new Error(`Slack ${method} answered ${response.status}`);
    const body = jsonOf(response, `Slack ${method}`);
    if (body.ok) return body;
    const error = String(body.error ?? `HTTP ${response.status}`);
    if (tolerated.includes(error)) return null;
    // With token rotation on, an access token lives 12 hours: refresh once, then try again.
    if (error === 'token_expired' && attempt === 0) {
      await access.oauth!.refresh();
      continue;
    }
    if (REVOKED.has(error) || error === 'token_expired') throw new ConsentRevoked(`Slack refused the token (${error})`);
    if (error === 'missing_scope')
      throw new ProviderConfigError(
        `The Slack app lacks the scope ${body.needed ?? ''}; add it and consent again`,
        'config',
      );
    if (error === 'channel_not_found' || error === 'not_in_channel')
      throw new ProviderConfigError(
        `Slack: ${error} (${params.channel}); invite the app to the channel`,
        'config/channels',
      );
    throw new Error(`Slack ${method} answered ${error}`);
  }
}

/** The configured channels as ids and names; names are looked up with conversations.list. */
async function resolveChannels(access: SourceAccess, config: Config): Promise<Channel[]> {
  const wanted = config.channels.map((c) => c.replace(/^#/, ''));
  const found = new Map<string, Channel>();
  let cursor: string | undefined;
  do {
    const page = await call(access, 'conversations.list', {
      types: 'public_channel,private_channel',
      exclude_archived: 'true',
      limit: 200,
      cursor,
    });
    for (const c of page.channels as Array<{ id: string; name: string }>) {
      if (wanted.includes(c.id) || wanted.includes(c.name))
        found.set(wanted.includes(c.id) ? c.id : c.name, { id: c.id, name: c.name });
    }
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
  const missing = wanted.filter((w) => !found.has(w));
  if (missing.length)
    throw new ProviderConfigError(
      `Slack has no channel ${missing.map((m) => `#${m}`).join(', ')} visible to the app`,
      'config/channels',
    );
  return wanted.map((w) => found.get(w)!);
}

const timeOf = (ts: string) => new Date(Math.round(Number(ts) * 1000)).toISOString();

export const slack: ConnectorProvider = {
  name: 'slack',
  title: 'Slack',
  description:
    'Reads the messages and threads of chosen Slack channels; edits and deletions are reflected on the next sync.',
  authKind: 'oauth2',
  configSchema: Config,
  credentialsSchema: null,
  capabilities: ['oauth2', 'deletions', 'edits', 'resumable', 'rate_limits'],
  oauth: {
    authorizeUrl: 'https://slack.com/oauth/v2/authorize',
    tokenUrl: 'https://slack.com/api/oauth.v2.access',
    scopes: ['channels:read', 'channels:history', 'groups:read', 'groups:history', 'users:read'],
    scopeSeparator: ',',
    // Slack takes PKCE only from apps that opt in to it; a server-side app authenticates with its secret.
    pkce: false,
  },

  async validate(access) {
    await call(access, 'auth.test');
    await resolveChannels(access, access.config as Config);
  },

  async sync(run: SyncRun) {
    const config = run.config as Config;
    const team = await call(run, 'auth.test');
    const workspace = String(team.url ?? 'https://slack.com/').replace(/\/?$/, '/');
    const channels = await resolveChannels(run, config);
    const names = new Map<string, string>();
    const nameOf = async (message: SlackMessage): Promise<string> => {
      if (!message.user) return message.bot_profile?.name ?? message.username ?? 'bot';
      if (!names.has(message.user)) {
        // A user deleted from the workspace keeps their id as the name.
        const user = (await call(run, 'users.info', { user: message.user }, ['user_not_found']))?.user;
        names.set(message.user, user?.profile?.display_name || user?.real_name || user?.name || message.user);
      }
      return names.get(message.user)!;
    };
    // <@U123> mentions read as @name. Slack escapes "<" and ">" in text (&lt;, &gt;), so no label holds them: each pattern stops at the next "<", where
    // [^>]* read from every "<@U|" to the end of a message without ">" (quadratic); the names are looked up first, then
    // every mention replaced in one pass (a pass per mention was quadratic too).
    const readable = async (text: string) => {
      const mention = /<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>/g;
      const named = new Map<string, string>();
      for (const [, id] of text.matchAll(mention)) named.set(id!, await nameOf({ ts: '', user: id! }));
      return text
        .replace(mention, (_, id: string) => `@${named.get(id)}`)
        .replace(/<#C[A-Z0-9]+\|([^<>]+)>/g, '#$1')
        .replace(/<(https?:[^|<>]+)\|([^<>]+)>/g, '$2 ($1)')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
    };
    const permalink = (channel: Channel, m: SlackMessage) =>
      `${workspace}archives/${channel.id}/p${m.ts.replace('.', '')}${m.thread_ts && m.thread_ts !== m.ts ? `?thread_ts=${m.thread_ts}&cid=${channel.id}` : ''}`;
    const statement = async (channel: Channel, m: SlackMessage): Promise<SourceStatement> => {
      const author = await nameOf(m);
      return {
        text: await readable(m.text ?? ''),
        time: timeOf(m.ts),
        speaker: author,
        sessionId: `slack:${channel.id}`,
        metadata: {
          slack: {
            channel_id: channel.id,
            channel: `#${channel.name}`,
            author,
            author_id: m.user ?? m.bot_id ?? null,
            ts: m.ts,
            ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
            ...(m.edited ? { edited_ts: m.edited.ts } : {}),
            permalink: permalink(channel, m),
          },
        },
      };
    };

    const oldest = config.oldest_days ? String(Math.floor(Date.now() / 1000) - config.oldest_days * 86_400) : undefined;
    const start = (run.checkpoint as { channel: number; cursor?: string } | null) ?? { channel: 0 };
    for (let i = start.channel; i < channels.length; i++) {
      const channel = channels[i]!;
      let cursor = i === start.channel ? start.cursor : undefined;
      do {
        const page = await call(run, 'conversations.history', {
          channel: channel.id,
          limit: config.page_size ?? 200,
          cursor,
          oldest,
        });
        for (const message of page.messages as SlackMessage[]) {
          // A reply also sent to the channel belongs to its thread's object.
          if (message.thread_ts && message.thread_ts !== message.ts) continue;
          let thread = [message];
          if (config.include_threads !== false && (message.reply_count ?? 0) > 0) {
            thread = [];
            let replies: string | undefined;
            do {
              const part = await call(run, 'conversations.replies', {
                channel: channel.id,
                ts: message.ts,
                limit: 200,
                cursor: replies,
              });
              thread.push(...(part.messages as SlackMessage[]).filter((m) => !thread.some((t) => t.ts === m.ts)));
              replies = part.response_metadata?.next_cursor || undefined;
            } while (replies);
          }
          const said = thread.filter((m) => !SKIPPED.has(m.subtype ?? '') && (m.text ?? '').trim() !== '');
          if (said.length === 0) continue;
          const statements: SourceStatement[] = [];
          for (const m of said) statements.push(await statement(channel, m));
          await run.object({
            sourceId: `${channel.id}/${message.ts}`,
            version: null,
            title: `#${channel.name} ${message.thread_ts ? 'thread' : 'message'} ${message.ts}`,
            url: permalink(channel, message),
            statements,
          });
        }
        cursor = page.response_metadata?.next_cursor || undefined;
        if (cursor) await run.saveCheckpoint({ channel: i, cursor });
      } while (cursor);
      if (i + 1 < channels.length) await run.saveCheckpoint({ channel: i + 1 });
    }
    return { complete: true };
  },
};
