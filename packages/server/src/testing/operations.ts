import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { ALL_SCOPES, DATA_PLANE_SCOPES, keyScopes } from '../core/access.js';
import {
  addMembership,
  createApiKey,
  createOrganization,
  createProject,
  createUser,
  revokeApiKey,
} from '../modules/org/service.js';
import type { Config } from '../config.js';
import type { TestApp } from './harness.js';
import { until } from './until.js';

/**
 * The probes' declaration table: for every operation of the served OpenAPI document, how to aim
 * a well-formed request at a resource of a given place, and what a permitted call answers. The
 * fuzz test takes its well-formed requests from here; the authorization matrix its cells. An
 * operation the document serves without an entry here fails both, so none is skipped silently.
 */

/**
 * Where a target lives, seen from the matrix's own place (organization A, project P, tenant
 * `acme`, end user `alice`): another end user, tenant, project of A, or organization.
 */
export type Place = 'own' | 'user' | 'tenant' | 'untenanted' | 'project' | 'org';

export const PLACES: Record<Place, { org: 'A' | 'B'; project: 'P' | 'Q' | 'PB'; tenant: string; endUser: string }> = {
  own: { org: 'A', project: 'P', tenant: 'acme', endUser: 'alice' },
  user: { org: 'A', project: 'P', tenant: 'acme', endUser: 'bob' },
  tenant: { org: 'A', project: 'P', tenant: 'globex', endUser: 'alice' },
  /** The same end user outside any tenant (no X-Tenant-ID); the /v1 plane has no such place. */
  untenanted: { org: 'A', project: 'P', tenant: '', endUser: 'alice' },
  project: { org: 'A', project: 'Q', tenant: 'acme', endUser: 'alice' },
  org: { org: 'B', project: 'PB', tenant: 'acme', endUser: 'alice' },
};

/**
 * The app the probes run: webhook receivers on loopback (a closed port: deliveries fail at once,
 * nothing leaves the machine), connectors reaching the probes' own site on loopback, and uploads
 * from 2 KB ingested by a job (so a fixture job is a small file).
 */
export const PROBE_CONFIG: Partial<Config> = {
  webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  outbound: { allow: ['127.0.0.1'] },
  upload: { maxBytes: 25 * 1024 * 1024, backgroundFromBytes: 2048 },
  // Consent URLs are built without reaching Slack; nothing calls its API in the probes.
  connectors: {
    redirectUrl: 'https://console.example.com/oauth/callback',
    vendors: { slack: { clientId: 'probe.client', clientSecret: 'probe-secret' } },
  },
};
export const RECEIVER = 'http://127.0.0.1:9/hook';

/** Text that must never appear in an answer about another place. */
export const marker = (place: Place) => `leakmarker${place}x`;
export const VICTIM_USER_AGENT = 'leakmarker-victim-session-agent';

export interface Credential {
  name: string;
  kind: 'none' | 'api_key' | 'bearer';
  /** Headers it sends. Keys send X-Project-ID of P (their project, or one they may not reach). */
  headers: Record<string, string>;
  /** Refused at authentication: revoked, expired, signed out. */
  dead?: boolean;
  /** A key of another organization or locked to another project, sent with X-Project-ID of P. */
  outsideProject?: boolean;
  scopes: readonly string[];
  role?: 'owner' | 'admin' | 'member' | 'viewer';
  /** The organization a bearer token acts in. */
  org?: 'A' | 'B';
  /** Narrowing a key carries: what it may not leave. */
  bound?: { endUser?: string; tenant?: string };
  /** For a token: signs in again as the same person (a fresh session). */
  relogin?: () => Promise<string>;
}

/** How a target in another place is reached, and so who is refused (404). */
export type Reach =
  /** The request keeps the own scope and names a resource elsewhere: refused for every credential. */
  | 'elsewhere'
  /** The request itself names the other place (header, body, path): refused only for a credential bound to its own. */
  | 'named';

export interface Built {
  params?: Record<string, string | number>;
  query?: Record<string, string | number>;
  body?: unknown;
  /** Scope headers of the place (X-Tenant-ID, X-End-User-ID); a raw payload's Content-Type. */
  headers?: Record<string, string>;
  /** A body sent as is (a multipart form), instead of `body` as JSON. */
  payload?: Buffer;
}

export interface Declaration {
  /** No credential: nothing to authorise (the matrix only checks it answers without one). */
  public?: true;
  /** What a permitted call answers. */
  ok?: number;
  /** A well-formed request aimed at `place` on behalf of `credential`. */
  build?: (w: World, place: Place, credential: Credential) => Promise<Built>;
  /** Places besides own it can be aimed at, and how. */
  targets?: Partial<Record<Exclude<Place, 'own'>, Reach>>;
  /**
   * bearer: `organization` when its own target is a resource of organization A (a token acting in
   * B is refused, 404), `caller` when it acts on the caller's own things or acting organization.
   */
  owner?: 'organization' | 'caller';
  /** The call ends the credential's session: a fresh sign-in per cell. */
  consumesSession?: true;
  /** The call ends the credential's other sessions: the fresh one replaces the credential's token. */
  endsOtherSessions?: true;
  /** The answer holds a whole project's memories (every end user and tenant of the target's project). */
  readsProject?: true;
  /** What a refused call answers, when not 404 (a batch answers per item). */
  refusedWith?: number;
  /** An exception to the rules, for one cell: the status, or undefined to keep the rule. */
  override?: (credential: Credential, place: Place) => number | undefined;
}

export interface World {
  t: TestApp;
  ids: { A: string; B: string; P: string; Q: string; PB: string };
  credentials: Credential[];
  /** A key with every scope in each organization, used to make fixtures. */
  makers: { A: string; B: string };
  ownerToken: string;
  otherOwnerToken: string;
  /** A fresh session of a viewer of A who also belongs to B. */
  victimSession(): Promise<number>;
  /** A live memory of the place (the same one until an operation erases it, or a new one when `fresh`). */
  memory(place: Place, fresh?: boolean): Promise<number>;
  /** A relation between two memories of the place. */
  relation(place: Place): Promise<number>;
  /** A completed export of project P (org A) or PB (org B). */
  export(org: 'A' | 'B'): Promise<number>;
  /** A webhook endpoint of project P or PB. */
  webhook(org: 'A' | 'B'): Promise<number>;
  /** A delivery (the test event) of a webhook endpoint of project P or PB. */
  delivery(org: 'A' | 'B'): Promise<{ endpointId: number; deliveryId: number }>;
  /** A new viewer of the organization. */
  member(org: 'A' | 'B'): Promise<number>;
  /** A pending invitation (to be viewer) of the organization. */
  invitation(org: 'A' | 'B'): Promise<number>;
  /** A finished import into project P or PB. */
  import(org: 'A' | 'B'): Promise<number>;
  feedback(place: Place): Promise<{ memoryId: number; feedbackId: number }>;
  job(place: Place): Promise<number>;
  project(org: 'A' | 'B'): Promise<string>;
  apiKey(org: 'A' | 'B'): Promise<number>;
  /** A web-crawler connection of project P or PB (the same one while it exists, a new one when `fresh`). */
  connection(org: 'A' | 'B', fresh?: boolean): Promise<number>;
  /** A Slack connection (OAuth, waiting for consent) of project P or PB. */
  oauthConnection(org: 'A' | 'B'): Promise<number>;
  /** A finished sync of a connection of project P or PB. */
  sync(org: 'A' | 'B'): Promise<{ connectionId: number; syncId: number }>;
  /** The job ingesting a large upload of the place. */
  uploadJob(place: Place): Promise<number>;
  /** The probes' website on loopback, for connections to read. */
  siteBase: string;
}

/** A multipart form with one part `file`, as a client uploads a document. */
export function uploadForm(name: string, text: string): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `probe${serial++}boundary`;
  const payload = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n${text}\r\n--${boundary}--\r\n`,
  );
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** A two-page website on loopback for connector fixtures; it does not keep the process alive. */
async function startProbeSite(): Promise<string> {
  const pages: Record<string, string> = {
    '/': '<html><body><h1>Probe docs</h1><p>The probe site has one page of facts.</p><a href="/more">More</a></body></html>',
    '/more': '<html><body><h1>More</h1><p>A second page about probing.</p></body></html>',
  };
  const server = createServer((req, res) => {
    const page = pages[req.url ?? ''];
    res.writeHead(page ? 200 : 404, { 'content-type': page ? 'text/html' : 'text/plain' });
    res.end(page ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const PASSWORD = 'correct horse battery';
let serial = 0;

/** Scope headers of a place, as a data-plane request sends them. */
export const placeHeaders = (place: Place, endUser = true): Record<string, string> => ({
  ...(PLACES[place].tenant ? { 'x-tenant-id': PLACES[place].tenant } : {}),
  ...(endUser ? { 'x-end-user-id': PLACES[place].endUser } : {}),
});

export async function buildWorld(t: TestApp): Promise<World> {
  const db = t.database.db;
  const A = t.organizationId;
  const P = t.projectId;
  const Q = (await createProject(db, { organizationId: A, name: 'Project Q', slug: 'q' })).id;
  const B = (await createOrganization(db, 'Organization B')).id;
  const PB = (await createProject(db, { organizationId: B, name: 'Project of B', slug: 'pb' })).id;
  const ids = { A, B, P, Q, PB };
  const key = async (input: Partial<Parameters<typeof createApiKey>[1]>) =>
    (await createApiKey(db, { organizationId: A, name: `probe key ${serial++}`, scopes: [...ALL_SCOPES], ...input }))
      .key;

  const person = async (memberships: [string, string][], userAgent?: string) => {
    const email = `probe-${serial++}-${Math.random().toString(36).slice(2)}@example.com`;
    const userId = await createUser(db, email, PASSWORD);
    for (const [org, role] of memberships) await addMembership(db, org, userId, role);
    // Memberships made in one millisecond tie on created_at, and sign-in opens the session in the first
    // by (created_at, organization id): space them so the first listed is the first joined.
    for (const [i, [org]] of memberships.entries()) {
      await db
        .updateTable('memberships')
        .set({ created_at: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString() })
        .where('organization_id', '=', org)
        .where('user_id', '=', userId)
        .execute();
    }
    const login = async () => {
      const res = await t.call('POST', '/auth/login', {
        key: null,
        project: null,
        endUser: null,
        body: { email, password: PASSWORD },
        headers: userAgent ? { 'user-agent': userAgent } : {},
      });
      if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
      return { token: res.body.access_token as string, sessionId: res.body.session_id as number };
    };
    return { userId, login };
  };

  const keyCredential = (name: string, secret: string, extra: Partial<Credential> = {}): Credential => ({
    name,
    kind: 'api_key',
    headers: { 'x-api-key': secret, 'x-project-id': P },
    scopes: ALL_SCOPES,
    ...extra,
  });
  const tokenCredential = async (
    name: string,
    role: Credential['role'],
    org: 'A' | 'B',
    memberships: [string, string][],
  ) => {
    const who = await person(memberships);
    const { token } = await who.login();
    return {
      name,
      kind: 'bearer',
      headers: { authorization: `Bearer ${token}` },
      scopes: ALL_SCOPES,
      role,
      org,
      relogin: async () => (await who.login()).token,
    } satisfies Credential;
  };

  const makerA = await key({});
  const makerB = (await createApiKey(db, { organizationId: B, name: 'maker B', scopes: [...ALL_SCOPES] })).key;
  const revoked = await createApiKey(db, { organizationId: A, name: 'revoked', scopes: [...ALL_SCOPES] });
  await revokeApiKey(db, A, revoked.id);
  const owner = await tokenCredential('owner token', 'owner', 'A', [[A, 'owner']]);
  const otherOwner = await tokenCredential('owner token of another organization', 'owner', 'B', [[B, 'owner']]);
  const signedOut = await person([[A, 'owner']]);
  const signedOutToken = (await signedOut.login()).token;
  expect((await t.call('POST', '/auth/logout', { token: signedOutToken })).status).toBe(200);
  // A viewer of A who also belongs to B: only they, or an admin of A, may see or end their session.
  const victim = await person(
    [
      [A, 'viewer'],
      [B, 'member'],
    ],
    VICTIM_USER_AGENT,
  );
  await victim.login();

  const credentials: Credential[] = [
    { name: 'no credential', kind: 'none', headers: { 'x-project-id': P }, scopes: [] },
    keyCredential('revoked key', revoked.key, { dead: true }),
    keyCredential('expired key', await key({ expiresAt: new Date(Date.now() - 60_000).toISOString() }), { dead: true }),
    keyCredential(
      "another organization's key",
      (await createApiKey(db, { organizationId: B, name: 'B key', scopes: [...ALL_SCOPES] })).key,
      { outsideProject: true },
    ),
    keyCredential("another project's key", await key({ projectId: Q }), { outsideProject: true }),
    keyCredential('read-only key', await key({ scopes: ALL_SCOPES.filter((s) => s.endsWith(':read')) }), {
      scopes: ALL_SCOPES.filter((s) => s.endsWith(':read')),
    }),
    keyCredential('write-only key', await key({ scopes: ALL_SCOPES.filter((s) => s.endsWith(':write')) }), {
      scopes: ALL_SCOPES.filter((s) => s.endsWith(':write')),
    }),
    // Bound keys made with every scope act without the control-plane ones (core/access.ts#keyScopes).
    keyCredential('end-user-bound key', await key({ endUserId: 'alice' }), {
      bound: { endUser: 'alice' },
      scopes: keyScopes({ scopes: ALL_SCOPES, tenantId: null, endUserId: 'alice' }),
    }),
    keyCredential('tenant-bound key', await key({ tenantId: 'acme' }), {
      bound: { tenant: 'acme' },
      scopes: keyScopes({ scopes: ALL_SCOPES, tenantId: 'acme', endUserId: null }),
    }),
    keyCredential('unbound key with every scope', makerA),
    // The default a key is made with: the data plane, none of the control plane.
    keyCredential('data-plane key', await key({ scopes: [...DATA_PLANE_SCOPES] }), { scopes: DATA_PLANE_SCOPES }),
    {
      name: 'signed-out token',
      kind: 'bearer',
      headers: { authorization: `Bearer ${signedOutToken}` },
      scopes: ALL_SCOPES,
      role: 'owner',
      org: 'A',
      dead: true,
    },
    await tokenCredential('viewer token', 'viewer', 'A', [[A, 'viewer']]),
    await tokenCredential('member token', 'member', 'A', [[A, 'member']]),
    await tokenCredential('admin token', 'admin', 'A', [[A, 'admin']]),
    owner,
    otherOwner,
  ];

  const maker = (place: Place) => ({
    'x-api-key': PLACES[place].org === 'A' ? makerA : makerB,
    'x-project-id': ids[PLACES[place].project],
    ...placeHeaders(place),
  });
  const made = async (method: string, url: string, place: Place, body?: unknown) => {
    const res = await t.call(method, url, {
      key: null,
      project: null,
      endUser: null,
      headers: maker(place),
      ...(body !== undefined ? { body } : {}),
    });
    if (res.status >= 300) throw new Error(`fixture ${method} ${url} failed: ${res.status} ${res.text}`);
    return res.body;
  };
  // One live memory per place, made again once an operation has erased it.
  const memories = new Map<Place, number>();
  const memory = async (place: Place, fresh = false) => {
    const cached = memories.get(place);
    if (cached !== undefined && !fresh) {
      const live = await db
        .selectFrom('memories')
        .select('id')
        .where('id', '=', cached)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (live) return cached;
    }
    const id = (await made('POST', '/memory/add', place, { text: `${marker(place)} fact number ${serial++}` }))
      .id as number;
    memories.set(place, id);
    return id;
  };
  const ownerTokenOf = (org: 'A' | 'B') =>
    (org === 'A' ? owner : otherOwner).headers.authorization!.slice('Bearer '.length);

  const fixtureTokens = { A: ownerTokenOf('A'), B: ownerTokenOf('B') };
  /** A call as the organization's owner; a probe may have ended the owner's session (that is what it probes): sign in again. */
  const ownerCall = async (
    org: 'A' | 'B',
    method: string,
    url: string,
    options: { headers?: Record<string, string>; body?: unknown },
    status: number,
  ) => {
    let res = await t.call(method, url, { token: fixtureTokens[org], ...options });
    if (res.status === 401)
      res = await t.call(method, url, {
        token: (fixtureTokens[org] = await (org === 'A' ? owner : otherOwner).relogin()),
        ...options,
      });
    if (res.status !== status) throw new Error(`fixture ${method} ${url} failed: ${res.status} ${res.text}`);
    return res.body;
  };
  const projectHeader = (org: 'A' | 'B') => ({ 'x-project-id': ids[org === 'A' ? 'P' : 'PB'] });
  let eventType: string | undefined;
  const webhook = async (org: 'A' | 'B') => {
    eventType ??=
      (await ownerCall('A', 'GET', '/org/webhooks/event-types', {}, 200)).items?.[0]?.type ?? 'memory.created';
    const body = { name: `probe hook ${serial++}`, url: RECEIVER, events: [eventType] };
    return (await ownerCall(org, 'POST', '/org/webhooks', { headers: projectHeader(org), body }, 201)).id as number;
  };
  const siteBase = await startProbeSite();
  const connections = new Map<'A' | 'B', number>();
  const connection = async (org: 'A' | 'B', fresh = false) => {
    const cached = connections.get(org);
    if (cached !== undefined && !fresh) {
      const live = await db
        .selectFrom('connector_connections')
        .select('id')
        .where('id', '=', cached)
        .executeTakeFirst();
      if (live) return cached;
    }
    const body = {
      provider: 'web_crawler',
      name: `probe connection ${serial++}`,
      config: { start_urls: [`${siteBase}/`], delay_ms: 0, max_depth: 1 },
    };
    const id = (await ownerCall(org, 'POST', '/connectors/connections', { headers: projectHeader(org), body }, 201))
      .id as number;
    if (!fresh) connections.set(org, id);
    return id;
  };
  const oauthConnections = new Map<'A' | 'B', number>();
  const oauthConnection = async (org: 'A' | 'B') => {
    const cached = oauthConnections.get(org);
    if (
      cached !== undefined &&
      (await db.selectFrom('connector_connections').select('id').where('id', '=', cached).executeTakeFirst())
    )
      return cached;
    const body = { provider: 'slack', name: `probe slack ${serial++}`, config: { channels: ['#general'] } };
    const id = (await ownerCall(org, 'POST', '/connectors/connections', { headers: projectHeader(org), body }, 201))
      .id as number;
    oauthConnections.set(org, id);
    return id;
  };
  const syncs = new Map<'A' | 'B', { connectionId: number; syncId: number }>();
  const sync = async (org: 'A' | 'B') => {
    const cached = syncs.get(org);
    if (cached) {
      const live = await db
        .selectFrom('connector_syncs')
        .select('id')
        .where('id', '=', cached.syncId)
        .executeTakeFirst();
      if (live) return cached;
    }
    const connectionId = await connection(org, true);
    const syncId = (
      await ownerCall(org, 'POST', `/connectors/connections/${connectionId}/sync`, { headers: projectHeader(org) }, 202)
    ).id as number;
    // Finished, so that what may be done with it does not depend on timing.
    await until(
      async () =>
        !['queued', 'running'].includes(
          (await ownerCall(org, 'GET', `/connectors/syncs/${syncId}`, { headers: projectHeader(org) }, 200)).status,
        ),
      'a fixture sync',
      10_000,
    );
    syncs.set(org, { connectionId, syncId });
    return { connectionId, syncId };
  };
  const uploadJob = async (place: Place) => {
    const text = `${marker(place)} large upload ${serial++}\n\n${'A paragraph of a long probe document. '.repeat(80)}`;
    const form = uploadForm(`probe-large-${serial++}.txt`, text);
    const res = await t.call('POST', '/memory/upload', {
      key: null,
      project: null,
      endUser: null,
      headers: { ...maker(place), ...form.headers },
      payload: form.payload,
    });
    if (res.status !== 202) throw new Error(`fixture upload failed: ${res.status} ${res.text}`);
    return res.body.job.id as number;
  };
  return {
    siteBase,
    connection,
    oauthConnection,
    sync,
    uploadJob,
    t,
    ids,
    credentials,
    makers: { A: makerA, B: makerB },
    ownerToken: ownerTokenOf('A'),
    otherOwnerToken: ownerTokenOf('B'),
    victimSession: async () => (await victim.login()).sessionId,
    memory,
    feedback: async (place) => {
      const memoryId = await memory(place);
      const feedbackId = (await made('POST', `/memory/${memoryId}/feedback`, place, { rating: 'positive' }))
        .id as number;
      return { memoryId, feedbackId };
    },
    job: async (place) => (await made('POST', '/memory/refresh', place)).id as number,
    relation: async (place) => {
      const other = (await made('POST', '/memory/add', place, { text: `${marker(place)} related fact ${serial++}` }))
        .id as number;
      return (
        await made('POST', '/memory/relations', place, {
          source_id: await memory(place),
          target_id: other,
          type: 'related',
        })
      ).id as number;
    },
    export: async (org) => {
      const id = (await ownerCall(org, 'POST', '/exports', { headers: projectHeader(org), body: {} }, 202))
        .id as number;
      // Finished, so that what may be done with it does not depend on timing.
      await until(
        async () =>
          (await ownerCall(org, 'GET', `/exports/${id}`, { headers: projectHeader(org) }, 200)).status === 'completed',
        'a fixture export',
        10_000,
      );
      return id;
    },
    import: async (org) => {
      const id = (
        await ownerCall(org, 'POST', '/imports', { headers: projectHeader(org), body: { memories: [] } }, 202)
      ).id as number;
      await until(
        async () =>
          !['queued', 'running'].includes(
            (await ownerCall(org, 'GET', `/imports/${id}`, { headers: projectHeader(org) }, 200)).status,
          ),
        'a fixture import',
        10_000,
      );
      return id;
    },
    webhook,
    delivery: async (org) => {
      const endpointId = await webhook(org);
      const delivery = await ownerCall(
        org,
        'POST',
        `/org/webhooks/${endpointId}/test`,
        { headers: projectHeader(org) },
        202,
      );
      return { endpointId, deliveryId: delivery.id as number };
    },
    member: async (org) => (await person([[ids[org], 'viewer']])).userId,
    invitation: async (org) =>
      (
        await ownerCall(
          org,
          'POST',
          '/org/invitations',
          { body: { email: `fixture-invited-${serial++}@example.com`, role: 'viewer' } },
          201,
        )
      ).id as number,
    project: async (org) =>
      (await ownerCall(org, 'POST', '/org/projects', { body: { name: `probe project ${serial++}` } }, 201))
        .id as string,
    apiKey: async (org) => (await createApiKey(db, { organizationId: ids[org], name: `fixture key ${serial++}` })).id,
  };
}

const dataTargets = {
  user: 'elsewhere',
  tenant: 'elsewhere',
  untenanted: 'elsewhere',
  project: 'elsewhere',
  org: 'elsewhere',
} as const;
/** Data-plane requests aimed at another end user or tenant by naming it in X-End-User-ID / X-Tenant-ID (or leaving it out). */
const namedScope = { user: 'named', tenant: 'named', untenanted: 'named' } as const;
/** The /v1 plane names its tenant and user in the body or query; every /v1 request has a tenant. */
const v1Named = { user: 'named', tenant: 'named' } as const;
const onMemory =
  (extra: (w: World, place: Place) => Promise<Partial<Built>> = async () => ({})) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { memory_id: await w.memory(place) },
    headers: placeHeaders('own'),
    ...(await extra(w, place)),
  });
/** Where a request aimed at `place` lands: a tenant-bound key that sends no X-Tenant-ID writes in its own tenant. */
export const landing = (place: Place, c: Credential): Place =>
  place === 'untenanted' && c.bound?.tenant ? 'own' : place;
const inPlace =
  (body?: (place: Place) => unknown, endUser = true) =>
  async (_w: World, place: Place, c: Credential): Promise<Built> => ({
    headers: placeHeaders(place, endUser),
    ...(body ? { body: body(landing(place, c)) } : {}),
  });
const v1Body = (place: Place, rest: Record<string, unknown>) => ({
  tenant_id: PLACES[place].tenant,
  user_id: PLACES[place].endUser,
  ...rest,
});

/** X-Project-ID of the place's project, for bearer operations that act on one project. */
const projectOf = (w: World, place: Place) => ({ 'x-project-id': w.ids[PLACES[place].project] });
const onWebhook =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { endpoint_id: await w.webhook(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
const onDelivery =
  () =>
  async (w: World, place: Place): Promise<Built> => {
    const { endpointId, deliveryId } = await w.delivery(PLACES[place].org);
    return { params: { endpoint_id: endpointId, delivery_id: deliveryId }, headers: projectOf(w, place) };
  };
const onMember =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { user_id: await w.member(PLACES[place].org) },
    ...(body !== undefined ? { body } : {}),
  });
const eventTypeOf = async (w: World) => {
  const res = await w.t.call('GET', '/org/webhooks/event-types', { token: w.ownerToken });
  return (res.body?.items?.[0]?.type as string | undefined) ?? 'memory.created';
};
const onConnection =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.connection(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
/** A connection of its own (the call removes, purges or syncs it). */
const onFreshConnection =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.connection(PLACES[place].org, true) },
    headers: projectOf(w, place),
  });
const onSync =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { sync_id: (await w.sync(PLACES[place].org)).syncId },
    headers: projectOf(w, place),
  });
const onOAuthConnection =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.oauthConnection(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
const inProject =
  () =>
  async (w: World, place: Place): Promise<Built> => ({ headers: projectOf(w, place) });
const onExport =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { id: await w.export(PLACES[place].org) },
    headers: projectOf(w, place),
  });

export const DECLARATIONS: Record<string, Declaration> = {
  'GET /healthz': { public: true },
  'GET /readyz': { public: true },
  'GET /auth/catalogue': { public: true },
  'POST /auth/login': { public: true, build: async (w) => ({ body: { email: w.t.email, password: w.t.password } }) },
  'POST /auth/refresh': { public: true },

  // ---- data plane ----------------------------------------------------------------------------
  'POST /memory/add': {
    ok: 201,
    targets: namedScope,
    build: inPlace((p) => ({ text: `${marker(p)} added ${serial++}` })),
  },
  'POST /memory/bulk-add': {
    ok: 200,
    targets: namedScope,
    build: inPlace((p) => [{ text: `${marker(p)} bulk ${serial++}` }]),
  },
  'POST /memory/infer': {
    ok: 200,
    targets: namedScope,
    build: inPlace((p) => ({
      messages: [{ role: 'user', content: `My favorite color is ${marker(p)} ${serial++}.` }],
    })),
  },
  'GET /memory': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), query: { total: 'true' } }),
  },
  'GET /memory/export': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place) }),
  },
  'POST /memory/batch-update': {
    ok: 200,
    targets: { ...dataTargets },
    refusedWith: 207,
    build: async (w, place) => ({
      headers: placeHeaders('own'),
      body: { updates: [{ id: await w.memory(place), importance: 0.9 }] },
    }),
  },
  'DELETE /memory/forget': {
    ok: 200,
    targets: { ...dataTargets },
    refusedWith: 200,
    build: async (w, place) => ({ headers: placeHeaders('own'), body: { ids: [await w.memory(place)] } }),
  },
  'DELETE /memory/user/{end_user_id}': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (
      await w.memory(place), { params: { end_user_id: PLACES[place].endUser }, headers: placeHeaders(place, false) }
    ),
  },
  'GET /memory/{memory_id}': { ok: 200, targets: dataTargets, build: onMemory() },
  'PATCH /memory/{memory_id}': {
    ok: 200,
    targets: dataTargets,
    build: onMemory(async () => ({ body: { importance: 0.8 } })),
  },
  'GET /memory/{memory_id}/history': { ok: 200, targets: dataTargets, build: onMemory() },
  'POST /memory/query': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { query: 'fact' } }),
  },
  'POST /memory/retrieve': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { prompt: 'fact' } }),
  },
  'POST /memory/search': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { query: 'fact' } }),
  },
  'POST /memory/compose': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { task: 'fact' } }),
  },
  'POST /memory/refresh': { ok: 202, targets: namedScope, build: inPlace() },
  'GET /memory/refresh/{job_id}': {
    ok: 200,
    targets: { user: 'named', tenant: 'named', untenanted: 'named', project: 'elsewhere', org: 'elsewhere' },
    // A job outside any tenant is outside a tenant-bound key's reach.
    override: (c, place) => (place === 'untenanted' && c.bound?.tenant ? 404 : undefined),
    build: async (w, place) => ({ params: { job_id: await w.job(place) }, headers: placeHeaders('own', false) }),
  },
  'POST /memory/{memory_id}/feedback': {
    ok: 201,
    targets: dataTargets,
    build: onMemory(async () => ({ body: { rating: 'negative' } })),
  },
  'GET /memory/{memory_id}/feedback': { ok: 200, targets: dataTargets, build: onMemory() },
  'DELETE /memory/{memory_id}/feedback/{feedback_id}': {
    ok: 200,
    targets: dataTargets,
    build: async (w, place) => {
      const { memoryId, feedbackId } = await w.feedback(place);
      return { params: { memory_id: memoryId, feedback_id: feedbackId }, headers: placeHeaders('own') };
    },
  },

  // ---- /v1 tenant plane: the tenant and user travel in the body or query ----------------------
  'POST /v1/memory/add_turn': {
    ok: 201,
    targets: v1Named,
    build: inPlace((p) => v1Body(p, { text: `${marker(p)} turn ${serial++}`, speaker: 'user' }), false),
  },
  'POST /v1/memory/recall': {
    ok: 200,
    targets: v1Named,
    build: async (w, place) => (
      await w.memory(place), { headers: placeHeaders(place, false), body: v1Body(place, { query: 'fact' }) }
    ),
  },
  'GET /v1/memory/status': { ok: 200, targets: { tenant: 'named' }, build: inPlace(undefined, false) },
  'GET /v1/memory/memories': {
    ok: 200,
    targets: v1Named,
    // A key bound to an end user lists without naming one: the binding alone must narrow the list.
    build: async (w, place, c) => (
      await w.memory(place),
      {
        headers: placeHeaders(place, false),
        query: c.bound?.endUser && place === 'own' ? {} : { user_id: PLACES[place].endUser },
      } as Built
    ),
  },

  // ---- sessions --------------------------------------------------------------------------------
  'POST /auth/logout': { ok: 200, owner: 'caller', consumesSession: true, build: async () => ({}) },
  'GET /auth/sessions': { ok: 200, owner: 'caller', build: async () => ({}) },
  'POST /auth/sessions/{session_id}/revoke': {
    ok: 200,
    owner: 'caller',
    targets: { user: 'elsewhere' },
    build: async (w, place, c) => ({
      params: { session_id: place === 'own' ? await ownSession(w, c) : await w.victimSession() },
    }),
    // Another person's session: only an admin or owner of the organization it belongs to may end it.
    override: (c, place) =>
      place === 'user' && c.kind === 'bearer' && c.org === 'A' && (c.role === 'owner' || c.role === 'admin')
        ? 200
        : undefined,
  },

  // ---- control plane ---------------------------------------------------------------------------
  'POST /organizations': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { name: `probe organization ${serial++}` } }),
  },
  'GET /organizations': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/projects': { ok: 200, owner: 'caller', build: async () => ({}) },
  'POST /org/projects': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { name: `probe project ${serial++}` } }),
  },
  'GET /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { project_id: await w.project(PLACES[place].org) } }),
  },
  'PATCH /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      params: { project_id: place === 'own' ? w.ids.P : w.ids.PB },
      body: { description: `probe ${serial++}` },
    }),
  },
  'DELETE /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { project_id: await w.project(PLACES[place].org) } }),
  },
  'POST /org/api-keys': { ok: 201, owner: 'caller', build: async () => ({ body: { name: `probe key ${serial++}` } }) },
  'GET /org/api-keys': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/api-keys/{key_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'DELETE /org/api-keys/{key_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'POST /org/api-keys/{key_id}/test': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'POST /org/api-keys/bulk-revoke': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    refusedWith: 200,
    build: async (w, place) => ({ body: { ids: [await w.apiKey(PLACES[place].org)] } }),
  },
  // ---- synthesis and intelligence (data plane) --------------------------------------------------
  'POST /memory/summarize': {
    ok: 201,
    targets: dataTargets,
    build: async (w, place) => ({ headers: placeHeaders('own'), body: { memory_ids: [await w.memory(place, true)] } }),
  },
  'POST /memory/relations': {
    ok: 201,
    targets: dataTargets,
    build: async (w, place) => {
      const target = await w.memory(place);
      return {
        headers: placeHeaders('own'),
        body: { source_id: await w.memory('own', true), target_id: target, type: 'related' },
      };
    },
  },
  'GET /memory/{memory_id}/relations': { ok: 200, targets: dataTargets, build: onMemory() },
  'DELETE /memory/relations/{relation_id}': {
    ok: 200,
    targets: dataTargets,
    build: async (w, place) => ({ params: { relation_id: await w.relation(place) }, headers: placeHeaders('own') }),
  },
  'POST /memory/synthesize': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (
      await w.memory(place), { headers: placeHeaders(place), body: { question: 'which fact?' } }
    ),
  },
  'GET /memory/ontology': { ok: 200, build: inPlace(undefined, false) },
  'PUT /memory/ontology': {
    ok: 200,
    build: inPlace(() => ({ categories: [], entity_types: [], relation_types: [] }), false),
  },
  'GET /memory/graph': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/clusters': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/decisions': { ok: 200, targets: namedScope, build: inPlace() },
  // No conflict to resolve exists in the fixtures: a permitted call finds none (404); the cell still
  // checks who is refused (401/403) and that a refusal changes nothing.
  'POST /memory/decision/{decision_id}/resolve': {
    ok: 404,
    build: async () => ({ params: { decision_id: 1 }, headers: placeHeaders('own'), body: { resolution: 'dismiss' } }),
  },
  'GET /memory/intelligence': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/knowledge/stats': { ok: 200, targets: namedScope, build: inPlace() },

  // ---- exports and imports (bearer, X-Project-ID names the project) ----------------------------
  'POST /exports': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place), body: {} }),
  },
  'GET /exports': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /exports/{id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  'DELETE /exports/{id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  // The fixture export has completed: a permitted cancel answers 409 (nothing left to cancel).
  'POST /exports/{id}/cancel': { ok: 409, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  'GET /exports/{id}/download': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    readsProject: true,
    build: onExport(),
  },
  'POST /imports': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place), body: { memories: [] } }),
  },
  'GET /imports': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /imports/{id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { id: await w.import(PLACES[place].org) }, headers: projectOf(w, place) }),
  },
  // The fixture import has finished: a permitted cancel answers 409.
  'POST /imports/{id}/cancel': {
    ok: 409,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { id: await w.import(PLACES[place].org) }, headers: projectOf(w, place) }),
  },

  // ---- webhooks (bearer, X-Project-ID names the project) -----------------------------------------
  'GET /org/webhooks/event-types': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'POST /org/webhooks': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      headers: projectOf(w, place),
      body: { name: `probe hook ${serial++}`, url: RECEIVER, events: [await eventTypeOf(w)] },
    }),
  },
  'GET /org/webhooks': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'PATCH /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook({ description: 'probe' }),
  },
  'DELETE /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'GET /org/webhooks/{endpoint_id}/health': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/pause': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/resume': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/rotate-secret': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/test': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/replay': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook({}),
  },
  'GET /org/webhooks/{endpoint_id}/deliveries': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'GET /org/webhooks/{endpoint_id}/deliveries/{delivery_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onDelivery(),
  },
  'POST /org/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onDelivery(),
  },

  // ---- people ------------------------------------------------------------------------------------
  'POST /invitations/accept': { public: true },
  'POST /auth/password/reset': { public: true },
  'POST /org/invitations': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { email: `invited-${serial++}@example.com`, role: 'viewer' } }),
  },
  'GET /org/invitations': { ok: 200, owner: 'caller', build: async () => ({}) },
  'DELETE /org/invitations/{invitation_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { invitation_id: await w.invitation(PLACES[place].org) } }),
  },
  'GET /org/members': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/members/{user_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onMember() },
  'PATCH /org/members/{user_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onMember({ role: 'member' }),
  },
  'DELETE /org/members/{user_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onMember() },
  'POST /org/members/{user_id}/password-reset': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onMember(),
  },
  // Sets the same password again (so the person can still sign in); ends the caller's other sessions.
  'POST /auth/password': {
    ok: 200,
    owner: 'caller',
    consumesSession: true,
    endsOtherSessions: true,
    build: async () => ({ body: { current_password: PASSWORD, new_password: PASSWORD } }),
  },

  // ---- file upload (data plane, multipart) -------------------------------------------------------
  'POST /memory/upload': {
    ok: 201,
    targets: namedScope,
    build: async (_w, place, c) => {
      const form = uploadForm(`probe-${serial++}.txt`, `${marker(landing(place, c))} uploaded fact ${serial++}`);
      return { headers: { ...placeHeaders(place), ...form.headers }, payload: form.payload };
    },
  },
  'GET /memory/upload/{job_id}': {
    ok: 200,
    targets: { user: 'named', tenant: 'named', untenanted: 'named', project: 'elsewhere', org: 'elsewhere' },
    // A job outside any tenant is outside a tenant-bound key's reach.
    override: (c, place) => (place === 'untenanted' && c.bound?.tenant ? 404 : undefined),
    build: async (w, place) => ({ params: { job_id: await w.uploadJob(place) }, headers: placeHeaders(place) }),
  },

  // ---- connectors (bearer, X-Project-ID names the project) --------------------------------------
  'GET /connectors/providers': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /connectors/providers/{provider}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { provider: 'web_crawler' }, headers: projectOf(w, place) }),
  },
  'POST /connectors/connections': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      headers: projectOf(w, place),
      body: {
        provider: 'web_crawler',
        name: `probe connection ${serial++}`,
        config: { start_urls: [`${w.siteBase}/`], delay_ms: 0, max_depth: 1 },
      },
    }),
  },
  'GET /connectors/connections': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'PATCH /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection({ schedule_minutes: 60 }),
  },
  'POST /connectors/connections/{connection_id}/repair': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'POST /connectors/connections/{connection_id}/authorize': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onOAuthConnection(),
  },
  // No consent was started with this state: a permitted call answers 400 on `state` (it reaches no provider).
  'POST /connectors/connections/{connection_id}/callback': {
    ok: 400,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onOAuthConnection({ state: 'probe-state-never-issued', code: 'probe-code' }),
  },
  'POST /connectors/connections/{connection_id}/purge': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'DELETE /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'GET /connectors/connections/{connection_id}/configuration': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'PUT /connectors/connections/{connection_id}/configuration': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) =>
      onConnection({ values: { start_urls: [`${w.siteBase}/`], delay_ms: 0, max_depth: 1 } })(w, place),
  },
  'POST /connectors/connections/{connection_id}/sync': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'GET /connectors/connections/{connection_id}/syncs': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'GET /connectors/connections/{connection_id}/objects': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      params: { connection_id: (await w.sync(PLACES[place].org)).connectionId },
      headers: projectOf(w, place),
    }),
  },
  'GET /connectors/syncs/{sync_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onSync() },
  // The fixture sync has finished: a permitted cancel answers 409 (nothing left to cancel).
  'POST /connectors/syncs/{sync_id}/cancel': {
    ok: 409,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onSync(),
  },
  'GET /connectors/insights': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /integrations': { ok: 200, owner: 'caller', build: async () => ({}) },
  // object_storage, not web_crawler: the connection fixtures need web_crawler enabled.
  'POST /integrations/{provider}/enable': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'object_storage' } }),
  },
  'POST /integrations/{provider}/disable': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'object_storage' } }),
  },
  // google_drive, not slack: the consent fixtures use the server's Slack client.
  'PUT /integrations/{provider}/oauth-client': {
    ok: 200,
    owner: 'caller',
    build: async () => ({
      params: { provider: 'google_drive' },
      body: { client_id: 'probe.apps.example', client_secret: 'probe-secret' },
    }),
  },
  'DELETE /integrations/{provider}/oauth-client': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'google_drive' } }),
  },
  'GET /integrations/overview': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },

  'GET /admin/team/audit-logs': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/billing/current-plan': { ok: 200, owner: 'caller', build: async () => ({}) },
};

/** Another live session of the person behind a token (a fresh sign-in), for operations that end one. */
async function ownSession(w: World, c: Credential): Promise<number> {
  if (c.kind !== 'bearer' || !c.relogin) return w.victimSession();
  const token = await c.relogin();
  const res = await w.t.call('GET', '/auth/sessions', { token });
  const current = (res.body?.items ?? []).find((s: { current: boolean }) => s.current);
  if (!current) throw new Error(`could not read the new session: ${res.status} ${res.text}`);
  return current.id as number;
}

/** The served path with its parameters filled in. */
export function fillPath(path: string, params: Record<string, string | number> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`no value for path parameter ${name}`);
    return encodeURIComponent(String(params[name]));
  });
}

export function queryString(query: Record<string, string | number> = {}): string {
  const entries = Object.entries(query);
  return entries.length
    ? `?${entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&')}`
    : '';
}
