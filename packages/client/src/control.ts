import { OPERATIONS } from './generated/operations.js';
import { type Body, type CallOptions, type Input, type OperationId, type Query, type RequestBody, type Result, Transport, type TransportOptions } from './transport.js';

/** A signed-in session: what POST /auth/login and POST /auth/refresh answer. */
export type Tokens = Result<'postAuthLogin'>;

export interface ControlClientOptions extends TransportOptions {
  /** Tokens of an earlier sign-in (e.g. stored by onTokens); or call signIn. */
  tokens?: Tokens;
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
    const { tokens, organizationId, projectId, onTokens: _, ...transport } = options;
    this.anonymous = new Transport(transport, { headers: async () => ({}) });
    this.transport = new Transport(transport, {
      headers: async (): Promise<Record<string, string>> => {
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
    const tokens = await this.anonymous.call('postAuthLogin', { body: { email, password, ...(scopes ? { scopes } : {}) } }, call);
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
    this.refreshing ??= this.anonymous.call('postAuthRefresh', { body: { refresh_token: current.refresh_token } })
      .then((tokens) => {
        this.useTokens(tokens, true);
        return true;
      }, () => false)
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  readonly auth = {
    login: (body: Body<'postAuthLogin'>, options?: CallOptions) => this.call('postAuthLogin', { body }, options),
    refresh: (body: Body<'postAuthRefresh'>, options?: CallOptions) => this.call('postAuthRefresh', { body }, options),
    logout: (options?: CallOptions) => this.call('postAuthLogout', {}, options),
    catalogue: (options?: CallOptions) => this.call('getAuthCatalogue', {}, options),
    changePassword: (body: Body<'postAuthPassword'>, options?: CallOptions) => this.call('postAuthPassword', { body }, options),
    resetPassword: (body: Body<'postAuthPasswordReset'>, options?: CallOptions) => this.call('postAuthPasswordReset', { body }, options),
  };

  readonly sessions = {
    list: (query: Query<'getAuthSessions'> = {}, options?: CallOptions) => this.call('getAuthSessions', { query }, options),
    listAll: (query: Query<'getAuthSessions'> = {}, options?: CallOptions) => this.transport.pages('getAuthSessions', { query }, this.scoped(options)),
    revoke: (sessionId: string | number, options?: CallOptions) => this.call('postAuthSessionsBySessionIdRevoke', { path: { session_id: sessionId } }, options),
  };

  readonly organizations = {
    create: (body: Body<'postOrganizations'>, options?: CallOptions) => this.call('postOrganizations', { body }, options),
    list: (query: Query<'getOrganizations'> = {}, options?: CallOptions) => this.call('getOrganizations', { query }, options),
    listAll: (query: Query<'getOrganizations'> = {}, options?: CallOptions) => this.transport.pages('getOrganizations', { query }, this.scoped(options)),
  };

  readonly projects = {
    list: (query: Query<'getOrgProjects'> = {}, options?: CallOptions) => this.call('getOrgProjects', { query }, options),
    listAll: (query: Query<'getOrgProjects'> = {}, options?: CallOptions) => this.transport.pages('getOrgProjects', { query }, this.scoped(options)),
    create: (body: Body<'postOrgProjects'>, options?: CallOptions) => this.call('postOrgProjects', { body }, options),
    get: (projectId: string | number, options?: CallOptions) => this.call('getOrgProjectsByProjectId', { path: { project_id: projectId } }, options),
    update: (projectId: string | number, body: Body<'patchOrgProjectsByProjectId'>, options?: CallOptions) => this.call('patchOrgProjectsByProjectId', { path: { project_id: projectId }, body }, options),
    delete: (projectId: string | number, options?: CallOptions) => this.call('deleteOrgProjectsByProjectId', { path: { project_id: projectId } }, options),
  };

  readonly keys = {
    create: (body: Body<'postOrgApiKeys'>, options?: CallOptions) => this.call('postOrgApiKeys', { body }, options),
    list: (query: Query<'getOrgApiKeys'> = {}, options?: CallOptions) => this.call('getOrgApiKeys', { query }, options),
    listAll: (query: Query<'getOrgApiKeys'> = {}, options?: CallOptions) => this.transport.pages('getOrgApiKeys', { query }, this.scoped(options)),
    get: (keyId: string | number, options?: CallOptions) => this.call('getOrgApiKeysByKeyId', { path: { key_id: keyId } }, options),
    revoke: (keyId: string | number, options?: CallOptions) => this.call('deleteOrgApiKeysByKeyId', { path: { key_id: keyId } }, options),
    test: (keyId: string | number, options?: CallOptions) => this.call('postOrgApiKeysByKeyIdTest', { path: { key_id: keyId } }, options),
    bulkRevoke: (body: Body<'postOrgApiKeysBulkRevoke'>, options?: CallOptions) => this.call('postOrgApiKeysBulkRevoke', { body }, options),
  };

  readonly audit = {
    list: (query: Query<'getAdminTeamAuditLogs'> = {}, options?: CallOptions) => this.call('getAdminTeamAuditLogs', { query }, options),
    listAll: (query: Query<'getAdminTeamAuditLogs'> = {}, options?: CallOptions) => this.transport.pages('getAdminTeamAuditLogs', { query }, this.scoped(options)),
  };

  readonly billing = {
    currentPlan: (options?: CallOptions) => this.call('getOrgBillingCurrentPlan', {}, options),
  };

  readonly webhooks = {
    eventTypes: (options?: CallOptions) => this.call('getOrgWebhooksEventTypes', {}, options),
    create: (body: Body<'postOrgWebhooks'>, options?: CallOptions) => this.call('postOrgWebhooks', { body }, options),
    list: (query: Query<'getOrgWebhooks'> = {}, options?: CallOptions) => this.call('getOrgWebhooks', { query }, options),
    listAll: (query: Query<'getOrgWebhooks'> = {}, options?: CallOptions) => this.transport.pages('getOrgWebhooks', { query }, this.scoped(options)),
    get: (endpointId: string | number, options?: CallOptions) => this.call('getOrgWebhooksByEndpointId', { path: { endpoint_id: endpointId } }, options),
    update: (endpointId: string | number, body: Body<'patchOrgWebhooksByEndpointId'>, options?: CallOptions) => this.call('patchOrgWebhooksByEndpointId', { path: { endpoint_id: endpointId }, body }, options),
    delete: (endpointId: string | number, options?: CallOptions) => this.call('deleteOrgWebhooksByEndpointId', { path: { endpoint_id: endpointId } }, options),
    health: (endpointId: string | number, options?: CallOptions) => this.call('getOrgWebhooksByEndpointIdHealth', { path: { endpoint_id: endpointId } }, options),
    pause: (endpointId: string | number, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdPause', { path: { endpoint_id: endpointId } }, options),
    resume: (endpointId: string | number, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdResume', { path: { endpoint_id: endpointId } }, options),
    rotateSecret: (endpointId: string | number, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdRotateSecret', { path: { endpoint_id: endpointId } }, options),
    test: (endpointId: string | number, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdTest', { path: { endpoint_id: endpointId } }, options),
    replay: (endpointId: string | number, body: Body<'postOrgWebhooksByEndpointIdReplay'>, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdReplay', { path: { endpoint_id: endpointId }, body }, options),
    deliveries: (endpointId: string | number, query: Query<'getOrgWebhooksByEndpointIdDeliveries'> = {}, options?: CallOptions) => this.call('getOrgWebhooksByEndpointIdDeliveries', { path: { endpoint_id: endpointId }, query }, options),
    deliveriesAll: (endpointId: string | number, query: Query<'getOrgWebhooksByEndpointIdDeliveries'> = {}, options?: CallOptions) => this.transport.pages('getOrgWebhooksByEndpointIdDeliveries', { path: { endpoint_id: endpointId }, query }, this.scoped(options)),
    delivery: (endpointId: string | number, deliveryId: string | number, options?: CallOptions) => this.call('getOrgWebhooksByEndpointIdDeliveriesByDeliveryId', { path: { endpoint_id: endpointId, delivery_id: deliveryId } }, options),
    retryDelivery: (endpointId: string | number, deliveryId: string | number, options?: CallOptions) => this.call('postOrgWebhooksByEndpointIdDeliveriesByDeliveryIdRetry', { path: { endpoint_id: endpointId, delivery_id: deliveryId } }, options),
  };

  readonly exports = {
    create: (body: Body<'postExports'>, options?: CallOptions) => this.call('postExports', { body }, options),
    list: (query: Query<'getExports'> = {}, options?: CallOptions) => this.call('getExports', { query }, options),
    listAll: (query: Query<'getExports'> = {}, options?: CallOptions) => this.transport.pages('getExports', { query }, this.scoped(options)),
    get: (id: string | number, options?: CallOptions) => this.call('getExportsById', { path: { id } }, options),
    delete: (id: string | number, options?: CallOptions) => this.call('deleteExportsById', { path: { id } }, options),
    cancel: (id: string | number, options?: CallOptions) => this.call('postExportsByIdCancel', { path: { id } }, options),
    /** The artifact, chunk by chunk; a lost connection resumes where it stopped (Range). */
    download: (id: string | number, options?: CallOptions) => this.transport.download('getExportsByIdDownload', { path: { id } }, this.scoped(options)),
  };

  readonly imports = {
    /** Imports a file: an Engram export (jsonl or json, optionally gzipped) or a Mem0 export. */
    create: (file: Blob | Uint8Array | string, query: Query<'postImports'> = {}, options?: CallOptions) => this.call('postImports', { query, raw: { body: file as RequestBody, contentType: 'application/octet-stream' } }, options),
    list: (query: Query<'getImports'> = {}, options?: CallOptions) => this.call('getImports', { query }, options),
    listAll: (query: Query<'getImports'> = {}, options?: CallOptions) => this.transport.pages('getImports', { query }, this.scoped(options)),
    get: (id: string | number, options?: CallOptions) => this.call('getImportsById', { path: { id } }, options),
    cancel: (id: string | number, options?: CallOptions) => this.call('postImportsByIdCancel', { path: { id } }, options),
  };

  readonly members = {
    invite: (body: Body<'postOrgInvitations'>, options?: CallOptions) => this.call('postOrgInvitations', { body }, options),
    acceptInvitation: (body: Body<'postInvitationsAccept'>, options?: CallOptions) => this.call('postInvitationsAccept', { body }, options),
    invitations: (query: Query<'getOrgInvitations'> = {}, options?: CallOptions) => this.call('getOrgInvitations', { query }, options),
    allInvitations: (query: Query<'getOrgInvitations'> = {}, options?: CallOptions) => this.transport.pages('getOrgInvitations', { query }, this.scoped(options)),
    revokeInvitation: (invitationId: string | number, options?: CallOptions) => this.call('deleteOrgInvitationsByInvitationId', { path: { invitation_id: invitationId } }, options),
    list: (query: Query<'getOrgMembers'> = {}, options?: CallOptions) => this.call('getOrgMembers', { query }, options),
    listAll: (query: Query<'getOrgMembers'> = {}, options?: CallOptions) => this.transport.pages('getOrgMembers', { query }, this.scoped(options)),
    get: (userId: string | number, options?: CallOptions) => this.call('getOrgMembersByUserId', { path: { user_id: userId } }, options),
    update: (userId: string | number, body: Body<'patchOrgMembersByUserId'>, options?: CallOptions) => this.call('patchOrgMembersByUserId', { path: { user_id: userId }, body }, options),
    remove: (userId: string | number, options?: CallOptions) => this.call('deleteOrgMembersByUserId', { path: { user_id: userId } }, options),
    passwordResetLink: (userId: string | number, options?: CallOptions) => this.call('postOrgMembersByUserIdPasswordReset', { path: { user_id: userId } }, options),
  };

  readonly connectors = {
    providers: (options?: CallOptions) => this.call('getConnectorsProviders', {}, options),
    provider: (provider: string | number, options?: CallOptions) => this.call('getConnectorsProvidersByProvider', { path: { provider } }, options),
    create: (body: Body<'postConnectorsConnections'>, options?: CallOptions) => this.call('postConnectorsConnections', { body }, options),
    list: (query: Query<'getConnectorsConnections'> = {}, options?: CallOptions) => this.call('getConnectorsConnections', { query }, options),
    listAll: (query: Query<'getConnectorsConnections'> = {}, options?: CallOptions) => this.transport.pages('getConnectorsConnections', { query }, this.scoped(options)),
    get: (connectionId: string | number, options?: CallOptions) => this.call('getConnectorsConnectionsByConnectionId', { path: { connection_id: connectionId } }, options),
    update: (connectionId: string | number, body: Body<'patchConnectorsConnectionsByConnectionId'>, options?: CallOptions) => this.call('patchConnectorsConnectionsByConnectionId', { path: { connection_id: connectionId }, body }, options),
    remove: (connectionId: string | number, options?: CallOptions) => this.call('deleteConnectorsConnectionsByConnectionId', { path: { connection_id: connectionId } }, options),
    repair: (connectionId: string | number, options?: CallOptions) => this.call('postConnectorsConnectionsByConnectionIdRepair', { path: { connection_id: connectionId } }, options),
    authorize: (connectionId: string | number, options?: CallOptions) => this.call('postConnectorsConnectionsByConnectionIdAuthorize', { path: { connection_id: connectionId } }, options),
    completeAuthorization: (connectionId: string | number, body: Body<'postConnectorsConnectionsByConnectionIdCallback'>, options?: CallOptions) => this.call('postConnectorsConnectionsByConnectionIdCallback', { path: { connection_id: connectionId }, body }, options),
    purge: (connectionId: string | number, options?: CallOptions) => this.call('postConnectorsConnectionsByConnectionIdPurge', { path: { connection_id: connectionId } }, options),
    configuration: (connectionId: string | number, options?: CallOptions) => this.call('getConnectorsConnectionsByConnectionIdConfiguration', { path: { connection_id: connectionId } }, options),
    setConfiguration: (connectionId: string | number, body: Body<'putConnectorsConnectionsByConnectionIdConfiguration'>, options?: CallOptions) => this.call('putConnectorsConnectionsByConnectionIdConfiguration', { path: { connection_id: connectionId }, body }, options),
    sync: (connectionId: string | number, options?: CallOptions) => this.call('postConnectorsConnectionsByConnectionIdSync', { path: { connection_id: connectionId } }, options),
    syncs: (connectionId: string | number, query: Query<'getConnectorsConnectionsByConnectionIdSyncs'> = {}, options?: CallOptions) => this.call('getConnectorsConnectionsByConnectionIdSyncs', { path: { connection_id: connectionId }, query }, options),
    syncsAll: (connectionId: string | number, query: Query<'getConnectorsConnectionsByConnectionIdSyncs'> = {}, options?: CallOptions) => this.transport.pages('getConnectorsConnectionsByConnectionIdSyncs', { path: { connection_id: connectionId }, query }, this.scoped(options)),
    getSync: (syncId: string | number, options?: CallOptions) => this.call('getConnectorsSyncsBySyncId', { path: { sync_id: syncId } }, options),
    cancelSync: (syncId: string | number, options?: CallOptions) => this.call('postConnectorsSyncsBySyncIdCancel', { path: { sync_id: syncId } }, options),
    objects: (connectionId: string | number, query: Query<'getConnectorsConnectionsByConnectionIdObjects'> = {}, options?: CallOptions) => this.call('getConnectorsConnectionsByConnectionIdObjects', { path: { connection_id: connectionId }, query }, options),
    objectsAll: (connectionId: string | number, query: Query<'getConnectorsConnectionsByConnectionIdObjects'> = {}, options?: CallOptions) => this.transport.pages('getConnectorsConnectionsByConnectionIdObjects', { path: { connection_id: connectionId }, query }, this.scoped(options)),
    insights: (options?: CallOptions) => this.call('getConnectorsInsights', {}, options),
  };

  readonly integrations = {
    list: (options?: CallOptions) => this.call('getIntegrations', {}, options),
    enable: (provider: string | number, options?: CallOptions) => this.call('postIntegrationsByProviderEnable', { path: { provider } }, options),
    disable: (provider: string | number, options?: CallOptions) => this.call('postIntegrationsByProviderDisable', { path: { provider } }, options),
    overview: (options?: CallOptions) => this.call('getIntegrationsOverview', {}, options),
    setOAuthClient: (provider: string | number, body: Body<'putIntegrationsByProviderOauthClient'>, options?: CallOptions) => this.call('putIntegrationsByProviderOauthClient', { path: { provider }, body }, options),
    removeOAuthClient: (provider: string | number, options?: CallOptions) => this.call('deleteIntegrationsByProviderOauthClient', { path: { provider } }, options),
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
