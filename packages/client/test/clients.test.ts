import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../server/src/testing/harness.js';
import { startSite, type LocalSite } from '../../server/src/testing/connectors.js';
import {
  AuthenticationError,
  ConflictError,
  ControlClient,
  EngramError,
  NotFoundError,
  PermissionError,
  ServiceClient,
  ValidationError,
  verifyWebhook,
  type Memory,
  type OperationId,
} from '../src/index.js';
import { OPERATIONS } from '../src/generated/operations.js';

/** Every operation both clients send, against a real app; the last test checks none was left out. */

const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
  for (let i = 0; i < 1200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not reached');
};

/** The promise's EngramError (the call must fail). */
const failure = async (promise: Promise<unknown>): Promise<EngramError> => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EngramError);
  return error as EngramError;
};

interface Receiver {
  url: string;
  deliveries: Array<{ headers: IncomingMessage['headers']; body: string }>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const deliveries: Receiver['deliveries'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req
      .setEncoding('utf8')
      .on('data', (c: string) => (body += c))
      .on('end', () => {
        deliveries.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, deliveries, close: () => new Promise((r) => server.close(() => r())) };
}

forEachDialect('TypeScript clients against a real server', (dialect) => {
  let site: LocalSite;
  let receiver: Receiver;
  beforeAll(async () => {
    site = await startSite({
      '/': [
        200,
        'text/html',
        '<html><body><h1>Docs</h1><p>The API rate limit is one hundred requests a minute.</p></body></html>',
      ],
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await site?.close();
    await receiver?.close();
  });
  const t = useTestApp(dialect, {
    outbound: { allow: ['127.0.0.1'] },
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
    upload: { maxBytes: 1024 * 1024, backgroundFromBytes: 2048 },
  });
  const sent = new Set<string>();
  let baseUrl: string;
  let service: ServiceClient;
  let control: ControlClient;
  const onRequest = ({ operationId }: { operationId: string }) => void sent.add(operationId);

  beforeAll(async () => {
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    service = new ServiceClient({ baseUrl, apiKey: t.key, projectId: t.projectId, endUserId: 'alice', onRequest });
    control = new ControlClient({ baseUrl, projectId: t.projectId, onRequest });
    await control.signIn(t.email, t.password);
  });

  it('data plane: memories, addMany in batches of 50, upload, retrieval, feedback, relations, forgetting', async () => {
    expect(await service.health.live()).toMatchObject({ status: 'ok' });
    expect(await service.health.ready()).toBeDefined();
    const memory = (await service.memories.add({
      text: 'Alice prefers window seats on long flights',
      tags: ['travel'],
    })) as Memory;
    expect(memory).toMatchObject({ text: 'Alice prefers window seats on long flights' });
    const items = Array.from({ length: 120 }, (_, i) => ({
      text: `Fact number ${i} about Alice's garden`,
      client_ref: `fact-${i}`,
    }));
    items[7] = { text: '' } as never;
    const many = await service.memories.addMany(items);
    expect(many.totals).toEqual({ created: 119, skipped: 0, failed: 1 });
    expect(many.results.map((r) => r.index)).toEqual(items.map((_, i) => i));
    expect(many.results[7]).toMatchObject({ status: 'failed', error: { code: 'validation_error' } });
    expect((await service.memories.addMany(items.slice(0, 3))).totals).toMatchObject({ skipped: 3 });
    const bulk = await service.memories.bulkAdd([{ text: 'Alice drives a blue bicycle' }]);
    expect(bulk.totals.created).toBe(1);
    const inferred = await service.memories.infer({
      messages: [{ role: 'user', content: 'I work at Contoso.', id: 'msg-1' }],
      session_id: 'onboarding',
    });
    expect(inferred.results.map((r) => [r.status, r.memory.text, r.memory.session_id])).toEqual([
      ['created', 'I work at Contoso.', 'onboarding'],
    ]);

    expect(await service.memories.get(memory.id)).toMatchObject({ id: memory.id });
    await service.memories.update(memory.id, { tags: ['travel', 'seats'] });
    expect((await service.memories.history(memory.id)).items.length).toBeGreaterThan(0);
    expect((await service.memories.batchUpdate({ updates: [{ id: memory.id, importance: 0.9 }] })).totals.updated).toBe(
      1,
    );
    expect((await service.memories.export()).memories.length).toBeGreaterThan(100);
    // The list, a page at a time by cursor; filters go as an object.
    const page = await service.memories.list({ limit: 2, total: true, filters: { tags_any: ['travel'] } });
    expect(page.items.map((m) => m.id)).toEqual([memory.id]);
    expect(page).toMatchObject({ total: 1, has_next: false, next_cursor: null });
    // The filter language's operators, and a 400 naming the path of an unknown one.
    const operators = await service.memories.list({
      filters: { tags: { $in: ['seats', 'none'] }, importance: { $gte: 0.9 }, $not: { text: { $contains: 'aisle' } } },
    });
    expect(operators.items.map((m) => m.id)).toEqual([memory.id]);
    const unknown = await failure(
      service.memories.query({ query: 'seats', filters: { metadata: { a: { $regex: 'x' } } } }),
    );
    expect(unknown).toMatchObject({ status: 400, field: 'filters/metadata/a/$regex' });
    const listed: number[] = [];
    for await (const m of service.memories.listAll({ limit: 7, order: 'asc' })) listed.push(m.id);
    expect(listed.length).toBeGreaterThan(100);
    expect(listed).toEqual([...listed].sort((a, b) => a - b));
    // Another end user, per call.
    const bob = (await service.memories.add({ text: 'Bob likes aisle seats' }, { endUserId: 'bob' })) as Memory;
    expect((await failure(service.memories.get(bob.id))).status).toBe(404);

    expect((await service.memories.query({ query: 'window seats', k: 3 })).memories[0]).toMatchObject({
      id: memory.id,
    });
    expect(await service.memories.retrieve({ prompt: 'Where does Alice like to sit?' })).toBeDefined();
    expect(await service.memories.search({ query: 'seats' })).toBeDefined();
    expect(await service.memories.compose({ task: 'Book a flight for Alice' })).toBeDefined();
    const refresh = await service.memories.refreshEmbeddings();
    expect((await service.memories.refreshJob(refresh.id)).id).toBe(refresh.id);
    expect(await service.memories.summarize({ memory_ids: [memory.id, bulk.results[0]!.memory!.id] })).toBeDefined();
    expect(await service.memories.synthesize({ question: 'Where does Alice like to sit?' })).toBeDefined();

    const feedback = await service.feedback.add(memory.id, { rating: 'positive' });
    expect((await service.feedback.list(memory.id)).items.length).toBe(1);
    await service.feedback.delete(memory.id, (feedback as { id: number }).id);
    const relation = await service.relations.create({
      source_id: memory.id,
      target_id: bulk.results[0]!.memory!.id,
      type: 'related',
    });
    expect((await service.relations.list(memory.id)).items.length).toBeGreaterThan(0);
    await service.relations.delete((relation as { id: number }).id);

    // A path is read from disk (named after its base name); bytes and Blobs are sent as given.
    const folder = mkdtempSync(join(tmpdir(), 'engram-client-upload-'));
    writeFileSync(join(folder, 'seats.md'), '# Seats\n\nAlice books seat 12A.');
    const small = await service.memories.upload(join(folder, 'seats.md'));
    expect(small.status).toBe('created');
    expect((await service.memories.query({ query: 'seat 12A' })).memories.map((m) => m.text).join(' ')).toContain(
      '12A',
    );
    const fromBytes = await service.memories.upload(
      Buffer.from('# Bikes\n\nAlice rides a blue bicycle to work.'),
      'bikes.md',
    );
    expect(fromBytes.status).toBe('created');
    const fromBlob = await service.memories.upload(new Blob(['# Tea\n\nAlice drinks green tea at four.']), 'tea.md');
    expect(fromBlob.status).toBe('created');
    rmSync(folder, { recursive: true, force: true });
    const large = await service.memories.upload(
      Buffer.from(`# Garden\n\n${'Alice grows tomatoes and basil in the garden. '.repeat(80)}`),
      'garden.md',
    );
    expect(large.status).toBe('queued');
    expect(await service.memories.uploadJob(large.job!.id)).toBeDefined();

    expect(await service.memories.forget({ filters: { tags_any: ['nothing-tagged-so'] }, dry_run: true })).toEqual({
      dry_run: true,
      ids: [],
      matched: 0,
      has_more: false,
    });
    expect(await service.memories.forget({ ids: [memory.id] })).toEqual([memory.id]);
    expect((await failure(service.memories.get(memory.id))).code).toBe('not_found');
    expect(await service.memories.forgetEndUser('bob')).toBeDefined();
  });

  it('answers errors with the class of their status, each an EngramError', async () => {
    const typed = async (promise: Promise<unknown>, type: typeof EngramError, status: number) => {
      const error = await failure(promise);
      expect(error, `${status}`).toBeInstanceOf(type);
      expect(error).toMatchObject({ status, name: type.name });
      return error;
    };
    expect((await typed(service.memories.add({ text: 42 } as never), ValidationError, 400)).field).toBe('text');
    await typed(service.memories.get(987_654), NotFoundError, 404);
    await typed(
      new ServiceClient({
        baseUrl,
        apiKey: 'engram_not_a_key',
        projectId: t.projectId,
        endUserId: 'alice',
      }).memories.get(1),
      AuthenticationError,
      401,
    );
    const reader = await control.keys.create({ name: 'reads only', scopes: ['memories:read'] });
    const readOnly = new ServiceClient({ baseUrl, apiKey: reader.key, projectId: t.projectId, endUserId: 'alice' });
    await typed(readOnly.memories.add({ text: 'Refused: the key only reads' }), PermissionError, 403);
  });

  it('intelligence and the /v1 plane', async () => {
    const ontology = await service.intelligence.ontology();
    const { categories, entity_types, relation_types } = ontology;
    expect(
      (await service.intelligence.replaceOntology({ categories, entity_types, relation_types })).revision,
    ).toBeGreaterThan(0);
    expect(await service.intelligence.graph({})).toBeDefined();
    expect(await service.intelligence.clusters({})).toBeDefined();
    expect(await service.intelligence.decisions({})).toBeDefined();
    expect((await failure(service.intelligence.resolveDecision(999_999, { resolution: 'dismiss' }))).status).toBe(404);
    expect(await service.intelligence.report()).toBeDefined();
    expect(await service.intelligence.stats()).toBeDefined();

    // A cross-tenant key names its tenant (X-Tenant-ID), here once for the client.
    const tenant = new ServiceClient({ baseUrl, apiKey: t.key, projectId: t.projectId, tenantId: 'acme', onRequest });
    const turn = await tenant.v1.addTurn({
      tenant_id: 'acme',
      user_id: 'u1',
      text: 'I moved to Lisbon last spring',
      speaker: 'user',
    });
    expect(turn.status).toBe('created');
    expect(
      (await tenant.v1.recall({ tenant_id: 'acme', user_id: 'u1', query: 'moved to Lisbon' })).memories.map(
        (m) => m.id,
      ),
    ).toEqual([turn.id]);
    expect(await tenant.v1.status()).toBeDefined();
    const listed = [];
    for await (const item of tenant.v1.memoriesAll({ tenant_id: 'acme', user_id: 'u1', limit: 1 })) listed.push(item);
    expect(listed.map((m) => m.id)).toEqual([turn.id]);
    expect((await tenant.v1.memories({ tenant_id: 'acme', user_id: 'u1' })).total).toBe(1);
  });

  it('control plane: auth, organizations, projects, keys, members, audit, billing', async () => {
    expect(await control.auth.catalogue()).toBeDefined();
    const second = await control.auth.login({ email: t.email, password: t.password });
    const refreshed = await control.auth.refresh({ refresh_token: second.refresh_token });
    expect(refreshed.session_id).toBe(second.session_id);
    const sessions = [];
    for await (const session of control.sessions.listAll({ limit: 1 })) sessions.push(session);
    expect(sessions.length).toBeGreaterThanOrEqual(2);
    expect((await control.sessions.list()).total).toBe(sessions.length);
    await control.sessions.revoke(second.session_id);

    expect((await control.organizations.list()).items.length).toBeGreaterThan(0);
    expect(await control.organizations.create({ name: 'Second organization' })).toMatchObject({
      name: 'Second organization',
    });

    const project = await control.projects.create({ name: 'Client project' });
    expect(await control.projects.get(project.id)).toMatchObject({ id: project.id });
    expect(await control.projects.update(project.id, { description: 'from the client' })).toMatchObject({
      description: 'from the client',
    });
    expect((await control.projects.list()).items.map((p) => p.id)).toContain(project.id);

    const key = await control.keys.create({ name: 'client key', project_id: project.id });
    expect(await control.keys.get(key.id)).toMatchObject({ id: key.id });
    expect(await control.keys.test(key.id)).toBeDefined();
    const keys = [];
    for await (const k of control.keys.listAll({ limit: 1 })) keys.push(k.id);
    expect(keys).toContain(key.id);
    expect((await control.keys.list()).total).toBe(keys.length);
    await control.keys.revoke(key.id);
    expect((await control.keys.bulkRevoke({ ids: [key.id] })).totals.already_revoked).toBe(1);
    await control.projects.delete(project.id);

    const email = `member-${Date.now()}@example.com`;
    const invitation = await control.members.invite({ email, role: 'member' });
    const accepted = await control.members.acceptInvitation({ token: invitation.token, password: 'a member password' });
    expect((await control.members.list()).items.map((m) => m.user_id)).toContain(accepted.user_id);
    expect(await control.members.get(accepted.user_id)).toMatchObject({ role: 'member' });
    expect(await control.members.update(accepted.user_id, { role: 'viewer' })).toMatchObject({ role: 'viewer' });
    const reset = await control.members.passwordResetLink(accepted.user_id);
    expect(
      await control.auth.resetPassword({ token: reset.token, new_password: 'another member password' }),
    ).toMatchObject({ user_id: accepted.user_id });
    const member = new ControlClient({ baseUrl, onRequest });
    await member.signIn(email, 'another member password');
    await member.auth.changePassword({ current_password: 'another member password', new_password: 'a third password' });
    await control.members.remove(accepted.user_id);
    const unwanted = await control.members.invite({ email: `unwanted-${Date.now()}@example.com`, role: 'viewer' });
    expect(await control.members.revokeInvitation(unwanted.id)).toMatchObject({ id: unwanted.id, status: 'revoked' });
    expect((await control.members.invitations({ status: 'revoked' })).items.map((i) => i.id)).toContain(unwanted.id);

    const audit = await control.audit.list({ limit: 5 });
    expect(audit.items.length).toBe(5);
    expect(await control.billing.currentPlan()).toBeDefined();

    // Signing out ends the session: the client's next call is 401 (its refresh token died with it).
    const leaving = new ControlClient({ baseUrl, onRequest });
    await leaving.signIn(t.email, t.password);
    await leaving.auth.logout();
    expect((await failure(leaving.billing.currentPlan())).status).toBe(401);
  });

  it('webhooks: endpoints, a signed test delivery the verifier accepts, deliveries, retries', async () => {
    expect((await control.webhooks.eventTypes()).items.length).toBeGreaterThan(0);
    const endpoint = await control.webhooks.create({ name: 'receiver', url: receiver.url, events: ['memory.created'] });
    expect(await control.webhooks.get(endpoint.id)).toMatchObject({ id: endpoint.id });
    expect(await control.webhooks.update(endpoint.id, { description: 'from the client' })).toMatchObject({
      description: 'from the client',
    });
    expect((await control.webhooks.list()).items.map((e) => e.id)).toContain(endpoint.id);
    await control.webhooks.test(endpoint.id);
    const delivered = await until(
      async () => receiver.deliveries,
      (d) => d.length > 0,
    );
    const event = await verifyWebhook({
      payload: delivered[0]!.body,
      headers: delivered[0]!.headers as Record<string, string>,
      secret: endpoint.secret,
    });
    expect(event).toBeDefined();
    await expect(
      verifyWebhook({
        payload: `${delivered[0]!.body} `,
        headers: delivered[0]!.headers as Record<string, string>,
        secret: endpoint.secret,
      }),
    ).rejects.toThrow(/signature/);
    const deliveries = await until(
      () => control.webhooks.deliveries(endpoint.id, {}),
      (page) => page.items.length > 0,
    );
    const delivery = deliveries.items[0]!;
    expect(await control.webhooks.delivery(endpoint.id, delivery.id)).toMatchObject({ id: delivery.id });
    const retried = await control.webhooks.retryDelivery(endpoint.id, delivery.id).catch((e: unknown) => e);
    expect(retried instanceof EngramError ? retried.status : 200).not.toBe(500);
    expect(await control.webhooks.health(endpoint.id)).toBeDefined();
    await control.webhooks.pause(endpoint.id);
    await control.webhooks.resume(endpoint.id);
    const rotated = await control.webhooks.rotateSecret(endpoint.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    // While the rotated secret overlaps, a delivery is signed under both: either verifies it.
    const before = receiver.deliveries.length;
    await control.webhooks.test(endpoint.id);
    const second = (
      await until(
        async () => receiver.deliveries,
        (d) => d.length > before,
      )
    ).at(-1);
    expect(String(second!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.secret]) {
      expect(
        await verifyWebhook({ payload: second!.body, headers: second!.headers as Record<string, string>, secret }),
      ).toBeDefined();
    }
    const stale = new Date(Date.now() + 10 * 60_000);
    await expect(
      verifyWebhook({
        payload: second!.body,
        headers: second!.headers as Record<string, string>,
        secret: rotated.secret,
        now: stale,
      }),
    ).rejects.toThrow(/tolerance/);
    expect(await control.webhooks.replay(endpoint.id, {})).toMatchObject({ replayed: expect.any(Number) });
    await control.webhooks.delete(endpoint.id);
    expect((await failure(control.webhooks.get(endpoint.id))).status).toBe(404);
  });

  it('automation with a scoped API key: webhooks:write creates a webhook, a key without it is refused', async () => {
    const scoped = await control.keys.create({
      name: 'deploy script',
      project_id: t.projectId,
      scopes: ['webhooks:read', 'webhooks:write'],
    });
    const automation = new ControlClient({ baseUrl, apiKey: scoped.key, onRequest });
    const endpoint = await automation.webhooks.create({
      name: 'from a key',
      url: receiver.url,
      events: ['memory.created'],
    });
    expect((await automation.webhooks.list()).items.map((e) => e.id)).toContain(endpoint.id);
    const plain = await control.keys.create({ name: 'data plane only' });
    const refused = await failure(
      new ControlClient({ baseUrl, apiKey: plain.key, projectId: t.projectId }).webhooks.create({
        name: 'refused',
        url: receiver.url,
        events: ['memory.created'],
      }),
    );
    expect(refused).toBeInstanceOf(PermissionError);
    await control.webhooks.delete(endpoint.id);
  });

  it('exports and imports: an export downloaded through the async iterator, imported again', async () => {
    const created = await control.exports.create({ format: 'jsonl' });
    const done = await until(
      () => control.exports.get(created.id),
      (e) => e.status === 'completed' || e.status === 'failed',
    );
    expect(done.status).toBe('completed');
    const chunks: Uint8Array[] = [];
    for await (const chunk of control.exports.download(created.id)) chunks.push(chunk);
    const file = Buffer.concat(chunks);
    expect(file.length).toBe(done.size);
    expect((await control.exports.list()).items.map((e) => e.id)).toContain(created.id);
    const cancelled = await failure(control.exports.cancel(created.id));
    expect(cancelled.status).toBe(409);
    await control.exports.delete(created.id);

    const imported = await control.imports.create(new Uint8Array(file), { format: 'engram' });
    const finished = await until(
      () => control.imports.get(imported.id),
      (i) => !['queued', 'running'].includes(i.status),
    );
    expect(finished.status).toBe('completed');
    expect((await control.imports.list()).items.map((i) => i.id)).toContain(imported.id);
    const conflict = await failure(control.imports.cancel(imported.id));
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict.status).toBe(409);
  });

  it('connectors and integrations', async () => {
    expect((await control.connectors.providers()).items.length).toBeGreaterThan(0);
    expect(await control.connectors.provider('web_crawler')).toMatchObject({ name: 'web_crawler' });
    const config = { start_urls: [`${site.base}/`], delay_ms: 0 };
    const connection = await control.connectors.create({ provider: 'web_crawler', name: 'Docs', config });
    expect(await control.connectors.get(connection.id)).toMatchObject({ id: connection.id });
    expect(await control.connectors.update(connection.id, { name: 'Docs site' })).toMatchObject({ name: 'Docs site' });
    expect(await control.connectors.configuration(connection.id)).toMatchObject({ values: config });
    await control.connectors.setConfiguration(connection.id, { values: config });
    const sync = await control.connectors.sync(connection.id);
    const finished = await until(
      () => control.connectors.getSync(sync.id),
      (s) => ['succeeded', 'failed', 'cancelled'].includes(s.status),
    );
    expect(finished.status).toBe('succeeded');
    expect((await failure(control.connectors.cancelSync(sync.id))).status).toBe(409);
    expect((await control.connectors.syncs(connection.id, {})).items.length).toBe(1);
    expect((await control.connectors.objects(connection.id, {})).items.length).toBeGreaterThan(0);
    expect((await control.connectors.list()).items.map((c) => c.id)).toContain(connection.id);
    expect(await control.connectors.insights()).toBeDefined();
    const repaired = await control.connectors.repair(connection.id).catch((e: unknown) => e);
    expect(repaired instanceof EngramError ? repaired.status : 200).toBeLessThan(500);
    await control.connectors.purge(connection.id);
    await control.connectors.remove(connection.id);

    expect((await control.integrations.list()).items.length).toBeGreaterThan(0);
    await control.integrations.disable('object_storage');
    await control.integrations.enable('object_storage');
    expect(await control.integrations.overview()).toBeDefined();

    // OAuth consent with the organization's own Slack app: the consent URL, then the user's refusal coming back.
    expect(
      await control.integrations.setOAuthClient('slack', { client_id: 'client-slack-1', client_secret: 'a secret' }),
    ).toMatchObject({ client_id: 'client-slack-1' });
    const slack = await control.connectors.create({
      provider: 'slack',
      name: 'Team',
      end_user_id: 'team',
      config: { channels: ['#general'] },
    });
    const consent = await control.connectors.authorize(slack.id);
    expect(consent.authorization_url).toContain('client-slack-1');
    const refused = await control.connectors
      .completeAuthorization(slack.id, { state: consent.state, error: 'access_denied' })
      .catch((e: unknown) => e);
    expect(refused instanceof EngramError ? refused.status : 200).toBeLessThan(500);
    await control.connectors.remove(slack.id);
    await control.integrations.removeOAuthClient('slack');
  });

  it('errors carry status, code, field and request_id', async () => {
    const error = await failure(service.memories.add({ text: 'x', importance: 7 }));
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_error',
      field: 'importance',
      request_id: expect.any(String),
    });
    const unauthenticated = new ServiceClient({ baseUrl, apiKey: 'eng_wrong', endUserId: 'alice', maxRetries: 0 });
    expect((await failure(unauthenticated.memories.query({ query: 'x' }))).code).toBe('unauthenticated');
  });

  it('sends every operation of the document (coverage)', () => {
    const missing = (Object.keys(OPERATIONS) as OperationId[]).filter((id) => !sent.has(id));
    expect(missing, 'operations no test above sends').toEqual([]);
  });
});
