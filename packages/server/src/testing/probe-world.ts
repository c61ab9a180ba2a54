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
import type { TestApp } from './harness.js';
import {
  type Place,
  PLACES,
  placeHeaders,
  RECEIVER,
  marker,
  VICTIM_USER_AGENT,
  type Credential,
  type World,
  uploadForm,
  PASSWORD,
  nextSerial,
} from './probe-places.js';
import { until } from './until.js';

/** The probes' world: organizations, projects, credentials and lazily made fixtures of every place (buildWorld). */

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

export async function buildWorld(t: TestApp): Promise<World> {
  const db = t.database.db;
  const A = t.organizationId;
  const P = t.projectId;
  const Q = (await createProject(db, { organizationId: A, name: 'Project Q', slug: 'q' })).id;
  const B = (await createOrganization(db, 'Organization B')).id;
  const PB = (await createProject(db, { organizationId: B, name: 'Project of B', slug: 'pb' })).id;
  const ids = { A, B, P, Q, PB };
  const key = async (input: Partial<Parameters<typeof createApiKey>[1]>) =>
    (
      await createApiKey(db, {
        organizationId: A,
        name: `probe key ${nextSerial()}`,
        scopes: [...ALL_SCOPES],
        ...input,
      })
    ).key;

  const person = async (memberships: [string, string][], userAgent?: string) => {
    const email = `probe-${nextSerial()}-${Math.random().toString(36).slice(2)}@example.com`;
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
    const id = (await made('POST', '/memory/add', place, { text: `${marker(place)} fact number ${nextSerial()}` }))
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
    const body = { name: `probe hook ${nextSerial()}`, url: RECEIVER, events: [eventType] };
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
      name: `probe connection ${nextSerial()}`,
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
    const body = { provider: 'slack', name: `probe slack ${nextSerial()}`, config: { channels: ['#general'] } };
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
    const text = `${marker(place)} large upload ${nextSerial()}\n\n${'A paragraph of a long probe document. '.repeat(80)}`;
    const form = uploadForm(`probe-large-${nextSerial()}.txt`, text);
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
      const other = (
        await made('POST', '/memory/add', place, { text: `${marker(place)} related fact ${nextSerial()}` })
      ).id as number;
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
          { body: { email: `fixture-invited-${nextSerial()}@example.com`, role: 'viewer' } },
          201,
        )
      ).id as number,
    project: async (org) =>
      (await ownerCall(org, 'POST', '/org/projects', { body: { name: `probe project ${nextSerial()}` } }, 201))
        .id as string,
    apiKey: async (org) =>
      (await createApiKey(db, { organizationId: ids[org], name: `fixture key ${nextSerial()}` })).id,
  };
}
