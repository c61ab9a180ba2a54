import { createHash } from 'node:crypto';
import type { VendorSettings } from '../../config.js';
import { randomToken, sha256Hex } from '../../core/crypto.js';
import { AppError, invalid } from '../../core/errors.js';
import { outboundRequest } from '../../core/outbound.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { decodeJson, nowIso } from '../../store/database.js';
import { jsonOf, sleep, vendorRequest } from './providers/http.js';
import { ConsentRevoked, type ConnectorProvider, type OAuthAccess, type SourceAccess } from './providers/provider.js';
import {
  openCredentials,
  sameCredentials,
  sealCredentials,
  sealSecret,
  openSecret,
  type ConnectionRow,
  type StoredCredentials,
} from './store.js';
import type { SyncDeps } from './deps.js';

/**
 * OAuth 2.0 consent for connector providers (authorization code grant, RFC 6749; PKCE S256 per
 * RFC 7636 where the provider takes it). `startConsent` answers the provider's consent URL with a
 * `state` that is single use, bound to the caller and the connection, and expires after ten
 * minutes (only its SHA-256 is stored). `completeConsent` claims the state with one conditional
 * DELETE, exchanges the code and stores the tokens encrypted in the connection's credentials.
 * `oauthAccess` hands providers a token that is refreshed a minute before it expires or when the
 * vendor answers 401; a refresh the vendor refuses means the consent is gone (ConsentRevoked).
 */

const STATE_TTL_MS = 10 * 60_000;
const REFRESH_MARGIN_MS = 60_000;

/** The tokens kept (encrypted) in connector_connections.credentials of an oauth2 connection. */
export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  /** ISO 8601; absent when the token does not expire. */
  expires_at?: string;
  scope?: string;
  token_type?: string;
}

export const vendorSettings = (deps: SyncDeps, provider: ConnectorProvider): VendorSettings =>
  (deps.connectors.vendors as Record<string, VendorSettings | undefined>)[provider.name] ?? {};

/** `url` with the configured base URL's origin (and path prefix) in place of its own. */
export function vendorEndpoint(settings: VendorSettings, url: string): URL {
  const target = new URL(url);
  if (!settings.baseUrl) return target;
  const base = new URL(settings.baseUrl);
  return new URL(`${base.pathname.replace(/\/$/, '')}${target.pathname}${target.search}`, base.origin);
}

/** The OAuth client of the organization for the provider (PUT /integrations/{provider}/oauth-client), else the server's. */
export async function clientOf(
  deps: SyncDeps,
  provider: ConnectorProvider,
  organizationId: string,
): Promise<{ clientId: string; clientSecret: string; source: 'organization' | 'server' }> {
  const own = await deps.database.db
    .selectFrom('integration_settings')
    .select('oauth_client')
    .where('organization_id', '=', organizationId)
    .where('provider', '=', provider.name)
    .executeTakeFirst();
  if (own?.oauth_client) {
    const sealed = openCredentials(deps.secret, own.oauth_client) as { client_id: string; client_secret: string };
    return { clientId: sealed.client_id, clientSecret: sealed.client_secret, source: 'organization' };
  }
  const { clientId, clientSecret } = vendorSettings(deps, provider);
  if (!clientId || !clientSecret) {
    const prefix = `ENGRAM_${provider.name.toUpperCase()}`;
    throw new AppError(
      'unavailable',
      `${provider.title} consent is not configured: no OAuth client for the organization (PUT /integrations/${provider.name}/oauth-client) nor the server (${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET)`,
    );
  }
  return { clientId, clientSecret, source: 'server' };
}

const actorKey = (ctx: WriteContext) => `${ctx.actor.type}:${ctx.actor.id ?? ''}`;
const pkceChallenge = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export interface Consent {
  authorization_url: string;
  state: string;
  redirect_uri: string;
  expires_at: string;
}

/** Starts consent: the URL to send the user's browser to. */
export async function startConsent(
  deps: SyncDeps,
  ctx: WriteContext,
  row: ConnectionRow,
  provider: ConnectorProvider,
): Promise<Consent> {
  const spec = provider.oauth;
  if (!spec) throw invalid('connection_id', `${provider.title} connections take credentials, not OAuth consent`);
  const { clientId } = await clientOf(deps, provider, row.organization_id);
  const state = randomToken(32);
  const verifier = spec.pkce ? randomToken(48) : null;
  const redirectUri = deps.connectors.redirectUrl;
  const expiresAt = new Date(Date.now() + STATE_TTL_MS).toISOString();
  await write(deps.database, ctx, async (trx, effects) => {
    await trx
      .deleteFrom('connector_oauth_states')
      .where('connection_id', '=', row.id)
      .where('expires_at', '<', effects.now)
      .execute();
    await trx
      .insertInto('connector_oauth_states')
      .values({
        state_hash: sha256Hex(state),
        connection_id: row.id,
        project_id: row.project_id,
        actor: actorKey(ctx),
        code_verifier: verifier === null ? null : sealSecret(deps.secret, verifier),
        redirect_uri: redirectUri,
        expires_at: expiresAt,
        created_at: effects.now,
      })
      .execute();
    effects.audit('connection.authorize', { type: 'connection', id: row.id });
  });
  const url = vendorEndpoint(vendorSettings(deps, provider), spec.authorizeUrl);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: spec.scopes.join(spec.scopeSeparator),
    state,
    ...(verifier ? { code_challenge: pkceChallenge(verifier), code_challenge_method: 'S256' } : {}),
    ...spec.authorizeParams,
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return { authorization_url: url.toString(), state, redirect_uri: redirectUri, expires_at: expiresAt };
}

/** Errors of the token endpoint that mean our client is misconfigured, not that the grant is gone. */
const CLIENT_ERRORS = new Set([
  'invalid_client',
  'unauthorized_client',
  'invalid_client_id',
  'bad_client_secret',
  'bad_redirect_uri',
]);

/** POSTs a grant to the provider's token endpoint; returns the tokens or the endpoint's error code. */
async function tokenRequest(
  deps: SyncDeps,
  provider: ConnectorProvider,
  organizationId: string,
  grant: Record<string, string>,
): Promise<{ tokens: TokenSet } | { error: string }> {
  const { clientId, clientSecret } = await clientOf(deps, provider, organizationId);
  const body = new URLSearchParams({ ...grant, client_id: clientId, client_secret: clientSecret });
  const response = await vendorRequest(
    { fetch: (url, request) => outboundRequest(deps.outbound, url, request), pause: sleep },
    vendorEndpoint(vendorSettings(deps, provider), provider.oauth!.tokenUrl),
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: Buffer.from(body.toString()),
      maxBytes: 1024 * 1024,
    },
  );
  if (response.status >= 500) throw new Error(`${provider.title} token endpoint answered ${response.status}`);
  const json = jsonOf<Record<string, unknown>>(response, `${provider.title} token endpoint`);
  // Slack answers 200 with ok:false; RFC 6749 answers 400 with `error`.
  if (response.status >= 400 || json.ok === false || typeof json.access_token !== 'string') {
    return { error: typeof json.error === 'string' ? json.error.slice(0, 100) : `HTTP ${response.status}` };
  }
  const expiresIn = Number(json.expires_in);
  return {
    tokens: {
      access_token: json.access_token,
      ...(typeof json.refresh_token === 'string' ? { refresh_token: json.refresh_token } : {}),
      ...(Number.isFinite(expiresIn) && expiresIn > 0
        ? { expires_at: new Date(Date.now() + expiresIn * 1000).toISOString() }
        : {}),
      ...(typeof json.scope === 'string' ? { scope: json.scope } : {}),
      ...(typeof json.token_type === 'string' ? { token_type: json.token_type } : {}),
    },
  };
}

/**
 * The connection's tokens as providers use them; refreshed tokens are stored (encrypted) at once, in
 * place of those this access holds only (`stored`). Another refresh or a new consent may have stored
 * tokens meanwhile; those are then used instead, as they are when the vendor refuses a refresh token
 * another refresh already spent (providers that rotate refresh tokens).
 */
export function oauthAccess(
  deps: SyncDeps,
  connection: Pick<ConnectionRow, 'id' | 'organization_id'>,
  provider: ConnectorProvider,
  stored: StoredCredentials,
): OAuthAccess {
  let tokens = openCredentials(deps.secret, stored.sealed) as TokenSet | null;
  /** Takes the tokens stored now if they are not those held; whether they were. */
  const adoptStored = async () => {
    const row = await deps.database.db
      .selectFrom('connector_connections')
      .select('credentials')
      .where('id', '=', connection.id)
      .executeTakeFirst();
    if (!row || row.credentials === stored.sealed) return false;
    stored.sealed = row.credentials;
    tokens = openCredentials(deps.secret, row.credentials) as TokenSet | null;
    return true;
  };
  const access: OAuthAccess = {
    async accessToken() {
      if (!tokens) throw new ConsentRevoked(`${provider.title} has not been authorised yet`);
      if (tokens.expires_at && Date.parse(tokens.expires_at) - REFRESH_MARGIN_MS <= Date.now()) return access.refresh();
      return tokens.access_token;
    },
    async refresh() {
      if (!tokens?.refresh_token)
        throw new ConsentRevoked(`${provider.title} access expired and no refresh token was granted; consent again`);
      const result = await tokenRequest(deps, provider, connection.organization_id, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
      });
      if ('error' in result) {
        if (CLIENT_ERRORS.has(result.error))
          throw new Error(`${provider.title} refused this server's OAuth client (${result.error})`);
        if (await adoptStored()) return access.accessToken();
        throw new ConsentRevoked(
          `${provider.title} refused to refresh the access (${result.error}); the consent was revoked or expired`,
        );
      }
      // A provider that rotates refresh tokens sends a new one; one that does not keeps the old valid.
      const refreshed = { ...result.tokens, refresh_token: result.tokens.refresh_token ?? tokens.refresh_token };
      const sealed = sealCredentials(deps.secret, refreshed as never);
      const swapped = await deps.database.db
        .updateTable('connector_connections')
        .set({ credentials: sealed, updated_at: nowIso() })
        .where('id', '=', connection.id)
        .where(sameCredentials(stored.sealed))
        .executeTakeFirst();
      if (Number(swapped.numUpdatedRows) === 0 && (await adoptStored())) return access.accessToken();
      stored.sealed = sealed;
      tokens = refreshed;
      return tokens.access_token;
    },
  };
  return access;
}

/**
 * How validate and sync reach the connection's source. `stored` follows the credentials through
 * refreshes, for a write decided from them to compare against (`sameCredentials`).
 */
export function sourceAccess(
  deps: SyncDeps,
  provider: ConnectorProvider,
  connection: Pick<ConnectionRow, 'id' | 'organization_id' | 'config' | 'credentials'>,
  stored: StoredCredentials = { sealed: connection.credentials },
): SourceAccess {
  const settings = vendorSettings(deps, provider);
  return {
    config: decodeJson(connection.config),
    credentials: provider.authKind === 'oauth2' ? null : openCredentials(deps.secret, stored.sealed),
    fetch: (url, request) => outboundRequest(deps.outbound, url, request),
    endpoint: (url) => vendorEndpoint(settings, url),
    oauth: provider.authKind === 'oauth2' ? oauthAccess(deps, connection, provider, stored) : null,
    pause: sleep,
  };
}

export interface CallbackInput {
  state: string;
  code?: string;
  error?: string;
}

/**
 * Claims the state (it must name this connection and this caller, and be live) and exchanges the
 * code for tokens. Answers the tokens, or what the provider said when the user refused consent.
 */
export async function exchangeCode(
  deps: SyncDeps,
  ctx: WriteContext,
  row: ConnectionRow,
  provider: ConnectorProvider,
  input: CallbackInput,
): Promise<TokenSet | { refused: string }> {
  if (!provider.oauth)
    throw invalid('connection_id', `${provider.title} connections take credentials, not OAuth consent`);
  if (input.code === undefined && input.error === undefined)
    throw invalid('code', "code (or the provider's error) is required");
  const claimed = await deps.database.db
    .deleteFrom('connector_oauth_states')
    .where('state_hash', '=', sha256Hex(input.state))
    .where('connection_id', '=', row.id)
    .where('actor', '=', actorKey(ctx))
    .where('expires_at', '>', nowIso())
    .returningAll()
    .executeTakeFirst();
  if (!claimed)
    throw invalid(
      'state',
      'The state is unknown, used, expired, or was issued for another connection or caller; start consent again',
    );
  if (input.code === undefined) return { refused: input.error! };
  const result = await tokenRequest(deps, provider, row.organization_id, {
    grant_type: 'authorization_code',
    code: input.code,
    redirect_uri: claimed.redirect_uri,
    ...(claimed.code_verifier ? { code_verifier: openSecret(deps.secret, claimed.code_verifier) } : {}),
  }).catch((error: unknown) => {
    if (error instanceof AppError) throw error;
    throw new AppError(
      'unavailable',
      `${provider.title} token endpoint cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  if ('error' in result) {
    if (CLIENT_ERRORS.has(result.error))
      throw new AppError('unavailable', `${provider.title} refused this server's OAuth client (${result.error})`);
    throw invalid('code', `${provider.title} refused the code (${result.error}); start consent again`);
  }
  return result.tokens;
}
