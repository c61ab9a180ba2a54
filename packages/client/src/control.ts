import { OPERATIONS } from './generated/operations.js';
import {
  type Body,
  type CallOptions,
  type Input,
  type OperationId,
  type Query,
  type RequestBody,
  type Result,
  Transport,
  type TransportOptions,
} from './transport.js';

/** A signed-in session: what POST /auth/login and POST /auth/refresh answer. */
export type Tokens = Result<'auth.login'>;

export interface ControlClientOptions extends TransportOptions {
  /** Tokens of an earlier sign-in (e.g. stored by onTokens); or call signIn. */
  tokens?: Tokens;
  /**
   * An API key with control-plane scopes (exports, webhooks, connectors, members:read, audit:read), for
   * automation without a person's session: sent as X-API-Key instead of a bearer token.
   */
  apiKey?: string;
  /** The organization to act in (X-Organization-ID); default the account's first. */
  organizationId?: string;
  /** The project of project-scoped control calls (X-Project-ID: connectors, exports). */
  projectId?: string;
  /** Called with new tokens after sign-in and after every refresh, to store them. */
  onTokens?: (tokens: Tokens) => void;
}

/** Refresh this long before the access token expires, so that no request carries an expired one. */
const REFRESH_MARGIN_MS = 30_000;

/**
 * The control plane with a signed-in account: organizations, projects, keys, members, sessions,
 * audit, billing, exports and imports, webhooks, connectors and integrations. The access token is
 * refreshed before it expires and once after a 401.
 */
export class ControlClient {
  readonly transport: Transport;
  private readonly anonymous: Transport;
  private readonly defaults: CallOptions;
  private tokens: Tokens | undefined;
  private expiresAt = 0;
  private refreshing: Promise<boolean> | undefined;

  constructor(private readonly options: ControlClientOptions) {
    const { tokens, apiKey, organizationId, projectId, onTokens: _, ...transport } = options;
    this.anonymous = new Transport(transport, { headers: async () => ({}) });
    this.transport = new Transport(transport, {
      headers: async (): Promise<Record<string, string>> => {
        if (apiKey) return { 'x-api-key': apiKey };
        if (this.tokens && Date.now() > this.expiresAt - REFRESH_MARGIN_MS) await this.refresh();
        return this.tokens ? { authorization: `Bearer ${this.tokens.access_token}` } : {};
      },
      renew: () => this.refresh(),
    });
    this.defaults = { organizationId, projectId };
    if (tokens) this.useTokens(tokens, false);
  }

  /** Signs in with e-mail and password; later calls carry the session's tokens. */
  async signIn(email: string, password: string, options?: { scopes?: string[] } & CallOptions): Promise<Tokens> {
    const { scopes, ...call } = options ?? {};
    const tokens = await this.anonymous.call(
      'auth.login',
      { body: { email, password, ...(scopes ? { scopes } : {}) } },
      call,
    );
    this.useTokens(tokens, true);
    return tokens;
  }

  /** The current tokens (after sign-in or the latest refresh). */
  get session(): Tokens | undefined {
    return this.tokens;
  }

  /** Sends any operation of the document by its operationId, with this client's credentials and scoping. */
  call<K extends OperationId>(operationId: K, input: Input = {}, options?: CallOptions): Promise<Result<K>> {
    const transport = 'anonymous' in OPERATIONS[operationId] ? this.anonymous : this.transport;
    return transport.call(operationId, input, this.scoped(options));
  }

  private scoped(options: CallOptions = {}): CallOptions {
    const merged: CallOptions = { ...options };
    for (const name of ['organizationId', 'projectId'] as const) merged[name] ??= this.defaults[name];
    return merged;
  }

  private useTokens(tokens: Tokens, fresh: boolean): void {
    this.tokens = tokens;
    this.expiresAt = fresh ? Date.now() + tokens.expires_in * 1000 : expiryOf(tokens.access_token);
    if (fresh) this.options.onTokens?.(tokens);
  }

  /** Trades the refresh token for new tokens, once for concurrent callers; false when the session is over. */
  private refresh(): Promise<boolean> {
    const current = this.tokens;
    if (!current) return Promise.resolve(false);
    this.refreshing ??= this.anonymous
      .call('auth.refresh', { body: { refresh_token: current.refresh_token } })
      .then(
        (tokens) => {
          this.useTokens(tokens, true);
          return true;
        },
        () => false,
      )
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  readonly auth = {
    login: (body: Body<'auth.login'>, options?: CallOptions) => this.call('auth.login', { body }, options),
    refresh: (body: Body<'auth.refresh'>, options?: CallOptions) => this.call('auth.refresh', { body }, options),
    logout: (options?: CallOptions) => this.call('auth.logout', {}, options),
    catalogue: (options?: CallOptions) => this.call('auth.catalogue', {}, options),
    changePassword: (body: Body<'auth.changePassword'>, options?: CallOptions) =>
      this.call('auth.changePassword', { body }, options),
    resetPassword: (body: Body<'auth.resetPassword'>, options?: CallOptions) =>
      this.call('auth.resetPassword', { body }, options),
  };

  readonly sessions = {
    list: (query: Query<'sessions.list'> = {}, options?: CallOptions) => this.call('sessions.list', { query }, options),
    listAll: (query: Query<'sessions.list'> = {}, options?: CallOptions) =>
      this.transport.pages('sessions.list', { query }, this.scoped(options)),
    revoke: (sessionId: string | number, options?: CallOptions) =>
      this.call('sessions.revoke', { path: { session_id: sessionId } }, options),
  };

  readonly organizations = {
    create: (body: Body<'organizations.create'>, options?: CallOptions) =>
      this.call('organizations.create', { body }, options),
    list: (query: Query<'organizations.list'> = {}, options?: CallOptions) =>
      this.call('organizations.list', { query }, options),
    listAll: (query: Query<'organizations.list'> = {}, options?: CallOptions) =>
      this.transport.pages('organizations.list', { query }, this.scoped(options)),
  };

  readonly projects = {
    list: (query: Query<'projects.list'> = {}, options?: CallOptions) => this.call('projects.list', { query }, options),
    listAll: (query: Query<'projects.list'> = {}, options?: CallOptions) =>
      this.transport.pages('projects.list', { query }, this.scoped(options)),
    create: (body: Body<'projects.create'>, options?: CallOptions) => this.call('projects.create', { body }, options),
    get: (projectId: string | number, options?: CallOptions) =>
      this.call('projects.get', { path: { project_id: projectId } }, options),
    update: (projectId: string | number, body: Body<'projects.update'>, options?: CallOptions) =>
      this.call('projects.update', { path: { project_id: projectId }, body }, options),
    delete: (projectId: string | number, options?: CallOptions) =>
      this.call('projects.delete', { path: { project_id: projectId } }, options),
  };

  readonly keys = {
    create: (body: Body<'keys.create'>, options?: CallOptions) => this.call('keys.create', { body }, options),
    list: (query: Query<'keys.list'> = {}, options?: CallOptions) => this.call('keys.list', { query }, options),
    listAll: (query: Query<'keys.list'> = {}, options?: CallOptions) =>
      this.transport.pages('keys.list', { query }, this.scoped(options)),
    get: (keyId: string | number, options?: CallOptions) => this.call('keys.get', { path: { key_id: keyId } }, options),
    revoke: (keyId: string | number, options?: CallOptions) =>
      this.call('keys.revoke', { path: { key_id: keyId } }, options),
    test: (keyId: string | number, options?: CallOptions) =>
      this.call('keys.test', { path: { key_id: keyId } }, options),
    bulkRevoke: (body: Body<'keys.bulkRevoke'>, options?: CallOptions) =>
      this.call('keys.bulkRevoke', { body }, options),
  };

  readonly audit = {
    list: (query: Query<'audit.list'> = {}, options?: CallOptions) => this.call('audit.list', { query }, options),
    listAll: (query: Query<'audit.list'> = {}, options?: CallOptions) =>
      this.transport.pages('audit.list', { query }, this.scoped(options)),
  };

  readonly billing = {
    currentPlan: (options?: CallOptions) => this.call('billing.currentPlan', {}, options),
  };

  readonly webhooks = {
    eventTypes: (options?: CallOptions) => this.call('webhooks.eventTypes', {}, options),
    create: (body: Body<'webhooks.create'>, options?: CallOptions) => this.call('webhooks.create', { body }, options),
    list: (query: Query<'webhooks.list'> = {}, options?: CallOptions) => this.call('webhooks.list', { query }, options),
    listAll: (query: Query<'webhooks.list'> = {}, options?: CallOptions) =>
      this.transport.pages('webhooks.list', { query }, this.scoped(options)),
    get: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.get', { path: { endpoint_id: endpointId } }, options),
    update: (endpointId: string | number, body: Body<'webhooks.update'>, options?: CallOptions) =>
      this.call('webhooks.update', { path: { endpoint_id: endpointId }, body }, options),
    delete: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.delete', { path: { endpoint_id: endpointId } }, options),
    health: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.health', { path: { endpoint_id: endpointId } }, options),
    pause: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.pause', { path: { endpoint_id: endpointId } }, options),
    resume: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.resume', { path: { endpoint_id: endpointId } }, options),
    rotateSecret: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.rotateSecret', { path: { endpoint_id: endpointId } }, options),
    test: (endpointId: string | number, options?: CallOptions) =>
      this.call('webhooks.test', { path: { endpoint_id: endpointId } }, options),
    replay: (endpointId: string | number, body: Body<'webhooks.replay'>, options?: CallOptions) =>
      this.call('webhooks.replay', { path: { endpoint_id: endpointId }, body }, options),
    deliveries: (endpointId: string | number, query: Query<'webhooks.deliveries'> = {}, options?: CallOptions) =>
      this.call('webhooks.deliveries', { path: { endpoint_id: endpointId }, query }, options),
    deliveriesAll: (endpointId: string | number, query: Query<'webhooks.deliveries'> = {}, options?: CallOptions) =>
      this.transport.pages('webhooks.deliveries', { path: { endpoint_id: endpointId }, query }, this.scoped(options)),
    delivery: (endpointId: string | number, deliveryId: string | number, options?: CallOptions) =>
      this.call('webhooks.delivery', { path: { endpoint_id: endpointId, delivery_id: deliveryId } }, options),
    retryDelivery: (endpointId: string | number, deliveryId: string | number, options?: CallOptions) =>
      this.call('webhooks.retryDelivery', { path: { endpoint_id: endpointId, delivery_id: deliveryId } }, options),
  };

  readonly exports = {
    create: (body: Body<'exports.create'>, options?: CallOptions) => this.call('exports.create', { body }, options),
    list: (query: Query<'exports.list'> = {}, options?: CallOptions) => this.call('exports.list', { query }, options),
    listAll: (query: Query<'exports.list'> = {}, options?: CallOptions) =>
      this.transport.pages('exports.list', { query }, this.scoped(options)),
    get: (id: string | number, options?: CallOptions) => this.call('exports.get', { path: { id } }, options),
    delete: (id: string | number, options?: CallOptions) => this.call('exports.delete', { path: { id } }, options),
    cancel: (id: string | number, options?: CallOptions) => this.call('exports.cancel', { path: { id } }, options),
    /** The artifact, chunk by chunk; a lost connection resumes where it stopped (Range). */
    download: (id: string | number, options?: CallOptions) =>
      this.transport.download('exports.download', { path: { id } }, this.scoped(options)),
  };

  readonly imports = {
    /** Imports a file: an Engram export (jsonl or json, optionally gzipped) or a Mem0 export. */
    create: (file: Blob | Uint8Array | string, query: Query<'imports.create'> = {}, options?: CallOptions) =>
      this.call(
        'imports.create',
        { query, raw: { body: file as RequestBody, contentType: 'application/octet-stream' } },
        options,
      ),
    list: (query: Query<'imports.list'> = {}, options?: CallOptions) => this.call('imports.list', { query }, options),
    listAll: (query: Query<'imports.list'> = {}, options?: CallOptions) =>
      this.transport.pages('imports.list', { query }, this.scoped(options)),
    get: (id: string | number, options?: CallOptions) => this.call('imports.get', { path: { id } }, options),
    cancel: (id: string | number, options?: CallOptions) => this.call('imports.cancel', { path: { id } }, options),
  };

  readonly members = {
    invite: (body: Body<'members.invite'>, options?: CallOptions) => this.call('members.invite', { body }, options),
    acceptInvitation: (body: Body<'members.acceptInvitation'>, options?: CallOptions) =>
      this.call('members.acceptInvitation', { body }, options),
    invitations: (query: Query<'members.invitations'> = {}, options?: CallOptions) =>
      this.call('members.invitations', { query }, options),
    allInvitations: (query: Query<'members.invitations'> = {}, options?: CallOptions) =>
      this.transport.pages('members.invitations', { query }, this.scoped(options)),
    revokeInvitation: (invitationId: string | number, options?: CallOptions) =>
      this.call('members.revokeInvitation', { path: { invitation_id: invitationId } }, options),
    list: (query: Query<'members.list'> = {}, options?: CallOptions) => this.call('members.list', { query }, options),
    listAll: (query: Query<'members.list'> = {}, options?: CallOptions) =>
      this.transport.pages('members.list', { query }, this.scoped(options)),
    get: (userId: string | number, options?: CallOptions) =>
      this.call('members.get', { path: { user_id: userId } }, options),
    update: (userId: string | number, body: Body<'members.update'>, options?: CallOptions) =>
      this.call('members.update', { path: { user_id: userId }, body }, options),
    remove: (userId: string | number, options?: CallOptions) =>
      this.call('members.remove', { path: { user_id: userId } }, options),
    passwordResetLink: (userId: string | number, options?: CallOptions) =>
      this.call('members.passwordResetLink', { path: { user_id: userId } }, options),
  };

  readonly connectors = {
    providers: (options?: CallOptions) => this.call('connectors.providers', {}, options),
    provider: (provider: string | number, options?: CallOptions) =>
      this.call('connectors.provider', { path: { provider } }, options),
    create: (body: Body<'connectors.create'>, options?: CallOptions) =>
      this.call('connectors.create', { body }, options),
    list: (query: Query<'connectors.list'> = {}, options?: CallOptions) =>
      this.call('connectors.list', { query }, options),
    listAll: (query: Query<'connectors.list'> = {}, options?: CallOptions) =>
      this.transport.pages('connectors.list', { query }, this.scoped(options)),
    get: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.get', { path: { connection_id: connectionId } }, options),
    update: (connectionId: string | number, body: Body<'connectors.update'>, options?: CallOptions) =>
      this.call('connectors.update', { path: { connection_id: connectionId }, body }, options),
    remove: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.remove', { path: { connection_id: connectionId } }, options),
    repair: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.repair', { path: { connection_id: connectionId } }, options),
    authorize: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.authorize', { path: { connection_id: connectionId } }, options),
    completeAuthorization: (
      connectionId: string | number,
      body: Body<'connectors.completeAuthorization'>,
      options?: CallOptions,
    ) => this.call('connectors.completeAuthorization', { path: { connection_id: connectionId }, body }, options),
    purge: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.purge', { path: { connection_id: connectionId } }, options),
    configuration: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.configuration', { path: { connection_id: connectionId } }, options),
    setConfiguration: (
      connectionId: string | number,
      body: Body<'connectors.setConfiguration'>,
      options?: CallOptions,
    ) => this.call('connectors.setConfiguration', { path: { connection_id: connectionId }, body }, options),
    sync: (connectionId: string | number, options?: CallOptions) =>
      this.call('connectors.sync', { path: { connection_id: connectionId } }, options),
    syncs: (connectionId: string | number, query: Query<'connectors.syncs'> = {}, options?: CallOptions) =>
      this.call('connectors.syncs', { path: { connection_id: connectionId }, query }, options),
    syncsAll: (connectionId: string | number, query: Query<'connectors.syncs'> = {}, options?: CallOptions) =>
      this.transport.pages('connectors.syncs', { path: { connection_id: connectionId }, query }, this.scoped(options)),
    getSync: (syncId: string | number, options?: CallOptions) =>
      this.call('connectors.getSync', { path: { sync_id: syncId } }, options),
    cancelSync: (syncId: string | number, options?: CallOptions) =>
      this.call('connectors.cancelSync', { path: { sync_id: syncId } }, options),
    objects: (connectionId: string | number, query: Query<'connectors.objects'> = {}, options?: CallOptions) =>
      this.call('connectors.objects', { path: { connection_id: connectionId }, query }, options),
    objectsAll: (connectionId: string | number, query: Query<'connectors.objects'> = {}, options?: CallOptions) =>
      this.transport.pages(
        'connectors.objects',
        { path: { connection_id: connectionId }, query },
        this.scoped(options),
      ),
    insights: (options?: CallOptions) => this.call('connectors.insights', {}, options),
  };

  readonly integrations = {
    list: (options?: CallOptions) => this.call('integrations.list', {}, options),
    enable: (provider: string | number, options?: CallOptions) =>
      this.call('integrations.enable', { path: { provider } }, options),
    disable: (provider: string | number, options?: CallOptions) =>
      this.call('integrations.disable', { path: { provider } }, options),
    overview: (options?: CallOptions) => this.call('integrations.overview', {}, options),
    setOAuthClient: (provider: string | number, body: Body<'integrations.setOAuthClient'>, options?: CallOptions) =>
      this.call('integrations.setOAuthClient', { path: { provider }, body }, options),
    removeOAuthClient: (provider: string | number, options?: CallOptions) =>
      this.call('integrations.removeOAuthClient', { path: { provider } }, options),
  };
}

/** The exp claim of a JWT, in milliseconds (0 when unreadable: refresh first). */
function expiryOf(accessToken: string): number {
  try {
    const payload = accessToken.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/');
    return (JSON.parse(atob(payload)) as { exp: number }).exp * 1000;
  } catch {
    return 0;
  }
}
