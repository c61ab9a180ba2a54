/**
 * The console as a person uses it: Debian's Chromium driven by playwright-core against a real Engram
 * server (the built server, its own SQLite database and port), checking the server's state after each
 * step through the official client. Screenshots go to test/screenshots/ (not committed).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlClient, type EngramError, ServiceClient } from '@engram/client';
import { SLACK_CLIENT, startFakeSlack, type FakeSlack } from '../../server/src/testing/fake-slack.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const CHROMIUM = process.env.ENGRAM_CHROMIUM ?? '/usr/bin/chromium';
const EMAIL = 'owner@console.test';
const PASSWORD = 'console-test-password';
const END_USER = 'ada';
const VIEWER = 'viewer@console.test';

let server: ChildProcess;
let baseUrl: string;
let dataDir: string;
let browser: BrowserContext;
let profile: string;
let page: Page;
let owner: ControlClient;
let receiver: Server;
let receiverUrl: string;
const received: Array<{ id: string; body: string }> = [];
let receiverAccepts = false;
/** Slack's Web API and consent page on loopback (its real wire format), for the Connectors page. */
let slack: FakeSlack;

/** A port free now, so the server's public URL (and with it the OAuth return address) is known before it starts. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  return port;
}

async function startServer(): Promise<string> {
  // The server is built the way `npm start` builds it; a fresh build costs nothing.
  execFileSync(process.execPath, [join(ROOT, 'packages/server/scripts/build-if-stale.mjs')], { stdio: 'inherit' });
  execFileSync(process.execPath, [join(ROOT, 'packages/console/scripts/build-if-stale.mjs')], { stdio: 'inherit' });
  dataDir = mkdtempSync(join(tmpdir(), 'engram-console-'));
  const port = await freePort();
  server = spawn(process.execPath, [join(ROOT, 'packages/server/dist/main.js'), 'serve'], {
    env: {
      ...process.env,
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_PORT: String(port),
      ENGRAM_HOST: '127.0.0.1',
      ENGRAM_LOG_LEVEL: 'warn',
      ENGRAM_DATABASE_URL: '',
      ENGRAM_BOOTSTRAP_EMAIL: EMAIL,
      ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD,
      ENGRAM_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      ENGRAM_WEBHOOK_ALLOW_HTTP: 'true',
      ENGRAM_OUTBOUND_ALLOW: '127.0.0.1',
      ENGRAM_SLACK_CLIENT_ID: SLACK_CLIENT.clientId,
      ENGRAM_SLACK_CLIENT_SECRET: SLACK_CLIENT.clientSecret,
      ENGRAM_SLACK_BASE_URL: slack.base,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(out);
      if (found) resolve(found[1]!);
    });
    server.on('exit', (code) => reject(new Error(`engram serve exited with ${code}: ${out}`)));
  });
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 150; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  slack = await startFakeSlack();
  baseUrl = await startServer();
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (c: Buffer) => (body += c.toString()));
    request.on('end', () => {
      received.push({ id: String(request.headers['webhook-id']), body });
      response.writeHead(receiverAccepts ? 204 : 500).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  owner = new ControlClient({ baseUrl, maxRetries: 0 });
  await owner.signIn(EMAIL, PASSWORD);
  // A fresh, empty profile every run (playwright passes it as --user-data-dir).
  profile = mkdtempSync(join(tmpdir(), 'engram-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1366, height: 860 },
    acceptDownloads: true,
  });
  page = await browser.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
  receiver?.close();
  await slack?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('the web console in Chromium', () => {
  let projectId: string;
  let apiKey: string;
  let service: ServiceClient;

  it('signs in and keeps no token in storage or the URL', async () => {
    const started = Date.now();
    await page.goto(`${baseUrl}/console/`);
    await page.getByLabel('E-mail').waitFor();
    console.log(`console: first load (navigation to the sign-in form drawn) ${Date.now() - started} ms`);
    // What a first visit downloads: the assets the page names, raw and gzip-compressed.
    const html = await (await fetch(`${baseUrl}/console/`)).text();
    const assets = [...html.matchAll(/\/console\/assets\/([^"]+)"/g)].map((m) =>
      readFileSync(join(ROOT, 'packages/console/dist/assets', m[1]!)),
    );
    const kb = (n: number) => (n / 1024).toFixed(1);
    console.log(
      `console: bundle ${kb(assets.reduce((n, a) => n + a.length, 0))} kB, ${kb(assets.reduce((n, a) => n + gzipSync(a).length, 0))} kB gzip (${assets.length} files)`,
    );
    await page.getByLabel('E-mail').fill(EMAIL);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Memories' }).waitFor();

    const stored = await page.evaluate(
      () => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie,
    );
    expect(stored).toBe('{}{}');
    expect(page.url()).toBe(`${baseUrl}/console/`);
    await shot('01-signed-in');
  });

  it('creates a project and a key, the key shown once', async () => {
    await page.getByRole('button', { name: 'Keys' }).click();
    await page.getByLabel('New project').fill('Console project');
    await page.getByRole('button', { name: 'Create project' }).click();
    const projects = await until(
      async () => (await owner.projects.list()).items.find((p) => p.name === 'Console project'),
      'the project',
    );
    projectId = String(projects.id);
    await page.getByRole('combobox', { name: 'Project' }).selectOption(projectId);
    await page.getByLabel('Key name').fill('console test key');
    await page.getByRole('button', { name: 'Create key' }).click();
    apiKey = (await page.getByTestId('secret').textContent())!;
    const key = (await owner.keys.list({ limit: 100 })).items.find((k) => k.name === 'console test key')!;
    expect(key.project_id).toBe(projectId);
    expect(apiKey.startsWith(key.prefix)).toBe(true);
    await shot('02-key-created');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect(page.getByTestId('secret').count()).resolves.toBe(0);
  });

  it('finds memories added through the API, with the explanation of each hit, and forgets one', async () => {
    service = new ServiceClient({ baseUrl, apiKey, endUserId: END_USER, maxRetries: 0 });
    const texts = ['Ada prefers a window seat on long flights', 'Ada is allergic to peanuts', 'Ada lives in Lisbon'];
    for (const text of texts) await service.memories.add({ text, tags: ['profile'] });
    const expected = await service.call('memories.query', { body: { query: 'window seat', k: 10, explain: true } });

    await page.getByRole('button', { name: 'Memories' }).click();
    await page.getByRole('button', { name: 'Use a temporary console key (1 hour)' }).click();
    await page.getByRole('textbox', { name: 'End user', exact: true }).fill(END_USER);
    await page.getByRole('button', { name: 'Show memories' }).click();
    for (const text of texts) await page.getByRole('button', { name: text }).first().waitFor();
    // The console's key is short-lived, for this project only, and the server knows it.
    const consoleKey = (await owner.keys.list({ limit: 100 })).items.find((k) => k.name === `console ${EMAIL}`)!;
    expect(consoleKey.project_id).toBe(projectId);
    expect(new Date(consoleKey.expires_at!).getTime() - Date.now()).toBeLessThanOrEqual(3600_000);

    await page.getByRole('textbox', { name: 'Search', exact: true }).fill('window seat');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hit = page.getByTestId('hit').first();
    await hit.waitFor();
    expect(await hit.textContent()).toContain(`score ${expected.memories[0]!.score.toFixed(3)}`);
    const explanation = hit.getByRole('table', { name: 'Score explanation' });
    for (const [feature, value] of Object.entries(expected.memories[0]!.explanation!).filter(([, v]) => v !== 0)) {
      expect(await explanation.getByRole('row', { name: new RegExp(`^${feature} `) }).textContent()).toContain(
        value.toFixed(3),
      );
    }
    await shot('03-search-explained');

    const peanut = (await service.call('memories.export', {})).memories.find((m) => m.text.includes('peanuts'))!;
    await page.getByRole('button', { name: 'Ada is allergic to peanuts' }).click();
    const detail = page.getByRole('region', { name: `Memory ${peanut.id}` });
    await detail.getByRole('heading', { name: 'History' }).waitFor();
    await detail.getByRole('button', { name: 'Forget…' }).click();
    await shot('04-forget-confirm');
    await detail.getByRole('button', { name: `Forget memory ${peanut.id}` }).click();
    await detail.waitFor({ state: 'detached' });
    const gone = await service.memories.get(peanut.id).then(
      () => undefined,
      (e: EngramError) => e.status,
    );
    expect(gone).toBe(404);
    await expect(page.getByRole('button', { name: 'Ada is allergic to peanuts' }).count()).resolves.toBe(0);
  });

  it('shows what the memories imply and resolves an open decision', async () => {
    await service.memories.add({ text: 'I work at Microsoft as an engineer.' });
    const recent = (await service.memories.add({ text: 'I started working at Google this year.' })) as { id: number };
    const decisions = () => service.call('intelligence.decisions', { query: { limit: 50 } });
    const open = await until(
      async () => (await decisions()).items.find((d) => d.attribute === 'works_at' && d.status === 'open'),
      'the decision',
    );

    // The key and the end user picked on the Memories page serve this page too.
    await page.getByRole('button', { name: 'Knowledge' }).click();
    await page.getByRole('button', { name: 'Show knowledge' }).click();
    const decision = page.getByTestId(`decision-${open.id}`);
    await decision.waitFor();
    const graph = await service.call('intelligence.graph', { query: { limit: 200 } });
    await page
      .getByRole('img', { name: `Entity graph: ${graph.nodes.length} entities, ${graph.edges.length} facts` })
      .waitFor();
    const facts = page.getByRole('table', { name: 'Current facts' });
    for (const edge of graph.edges.filter((e) => e.invalid_at === null)) {
      await facts
        .getByRole('cell', { name: edge.type.replace(/_/g, ' '), exact: true })
        .first()
        .waitFor();
    }
    await shot('10-knowledge');

    await decision.getByRole('button', { name: 'Keep “Google”' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Decision ${open.id} resolved: kept “Google”.` })
      .waitFor();
    const settled = (await decisions()).items.find((d) => d.id === open.id)!;
    expect(settled).toMatchObject({ status: 'resolved', resolution: { resolution: 'keep_one', memory_id: recent.id } });
    await expect(decision.count()).resolves.toBe(0);
    await shot('11-decision-resolved');
  });

  it('retries a failed webhook delivery to a local receiver', async () => {
    const endpoint = await owner.call(
      'webhooks.create',
      {
        body: {
          name: 'Local receiver',
          url: receiverUrl,
          events: ['memory.created'],
          retry_config: { schedule_seconds: [3600], disable_after_seconds: 86_400 },
        },
      },
      { projectId },
    );
    await service.memories.add({ text: 'Ada flies to Oslo in May' });
    const failed = await until(async () => {
      const items = (await owner.call('webhooks.deliveries', { path: { endpoint_id: endpoint.id } }, { projectId }))
        .items;
      return items.find((d) => d.attempts >= 1 && d.status !== 'succeeded');
    }, 'a failed delivery');
    expect(received).toHaveLength(1);

    await page.getByRole('button', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Open Local receiver' }).click();
    const row = page.getByTestId(`delivery-${failed.id}`);
    await row.waitFor();
    await row.getByRole('button', { name: /attempts/ }).click();
    await page.getByRole('heading', { name: `Attempts of delivery ${failed.id}` }).waitFor();
    await shot('05-webhook-failed-delivery');
    receiverAccepts = true;
    await row.getByRole('button', { name: 'Retry' }).click();
    const delivered = await until(async () => {
      const d = await owner.call(
        'webhooks.delivery',
        { path: { endpoint_id: endpoint.id, delivery_id: failed.id } },
        { projectId },
      );
      return d.status === 'succeeded' ? d : undefined;
    }, 'the retried delivery');
    expect(delivered.attempts).toBe(2);
    expect(received).toHaveLength(2);
    expect(received[1]!.id).toBe(received[0]!.id);
    expect(JSON.parse(received[1]!.body).type).toBe('memory.created');
    await page
      .getByRole('status')
      .filter({ hasText: `Delivery ${failed.id} retried.` })
      .waitFor();
    await shot('06-webhook-retried');
  });

  it('starts an export, shows its progress and downloads it, then imports it as another end user', async () => {
    await page.getByRole('button', { name: 'Exports' }).click();
    await page.getByLabel('End user (empty: the whole project)').fill(END_USER);
    await page.getByRole('button', { name: 'Start export' }).click();
    const created = await until(
      async () => (await owner.call('exports.list', { query: {} }, { projectId })).items[0],
      'the export',
    );
    const done = page.getByRole('button', { name: /^Download / });
    await done.waitFor({ timeout: 30_000 });
    expect((await owner.call('exports.get', { path: { id: created.id } }, { projectId })).status).toBe('completed');
    await shot('07-export-completed');
    const [download] = await Promise.all([page.waitForEvent('download'), done.click()]);
    const file = join(SHOTS, 'export.jsonl');
    await download.saveAs(file);
    const content = readFileSync(file, 'utf8');
    expect(content).toContain('Ada prefers a window seat on long flights');
    expect(content).not.toContain('peanuts');

    // The file back in, as another end user's memories: uploaded from the page, its progress shown.
    const records = content.trim().split('\n');
    const copy = join(SHOTS, 'import.jsonl');
    writeFileSync(
      copy,
      `${[
        records[0],
        ...records.slice(1).map((line) => JSON.stringify({ ...JSON.parse(line), end_user_id: 'ada-copy' })),
      ].join('\n')}\n`,
    );
    await page.getByLabel(/^File/).setInputFiles(copy);
    await page.getByRole('button', { name: 'Start import' }).click();
    const started = await until(async () => (await owner.imports.list({}, { projectId })).items[0], 'the import');
    await page
      .getByTestId(`import-${started.id}`)
      .getByRole('cell', { name: 'completed' })
      .waitFor({ timeout: 30_000 });
    expect(await owner.imports.get(started.id, { projectId })).toMatchObject({
      status: 'completed',
      created: records.length - 1,
      skipped: 0,
    });
    const copied = await new ServiceClient({ baseUrl, apiKey, projectId, maxRetries: 0 }).call(
      'memories.export',
      {},
      { endUserId: 'ada-copy' },
    );
    expect(copied.memories.map((m) => m.text)).toContain('Ada prefers a window seat on long flights');
    await shot('16-import-completed');
  });

  it('connects Slack through the consent window, syncs it with live progress and lists what it synced', async () => {
    slack.messages.set('C0GENERAL', [
      { ts: '1700000000.000100', user: 'U0ALICE', text: 'The team offsite is in Porto on June 12.' },
      { ts: '1700000100.000200', user: 'U0BOB', text: 'Lunch on Fridays is paid by the company.' },
    ]);
    await page.getByRole('button', { name: 'Connectors' }).click();
    const form = page.getByRole('form', { name: 'Add a connection' });
    await form.getByRole('combobox', { name: 'Provider' }).selectOption('slack');
    await form.getByLabel('Name').fill('Team Slack');
    await form.getByLabel(/^End user/).fill('team-slack');
    await form.getByLabel('Configuration (JSON)').fill(JSON.stringify({ channels: ['#general'] }));
    await form.getByRole('button', { name: 'Add connection' }).click();
    const panel = page.getByRole('region', { name: /^Connection / });
    await panel.getByRole('heading', { name: /Team Slack .*needs_consent/ }).waitFor();
    const connection = (await owner.call('connectors.list', { query: {} }, { projectId })).items.find(
      (c) => c.name === 'Team Slack',
    )!;
    expect(connection).toMatchObject({ provider: 'slack', state: 'needs_consent', end_user_id: 'team-slack' });
    await shot('14-connector-needs-consent');

    // Consent in a window of its own: Slack sends it back to the server's return page, which hands the
    // code to this tab; the tab (holding the session) completes consent.
    const [consentWindow] = await Promise.all([
      browser.waitForEvent('page'),
      panel.getByRole('button', { name: 'Give consent at Slack' }).click(),
    ]);
    await panel.getByText('Consent given: the connection is active.').waitFor();
    expect(consentWindow.isClosed() || !consentWindow.url().includes('code=')).toBe(true);
    expect((await owner.call('connectors.get', { path: { connection_id: connection.id } }, { projectId })).state).toBe(
      'active',
    );
    expect(slack.requests.some((r) => r.path === '/api/oauth.v2.access')).toBe(true);

    await panel.getByRole('button', { name: 'Sync now' }).click();
    const sync = await until(
      async () =>
        (await owner.call('connectors.syncs', { path: { connection_id: connection.id }, query: {} }, { projectId }))
          .items[0],
      'the sync',
    );
    await panel.getByTestId(`sync-${sync.id}`).getByRole('cell', { name: 'succeeded' }).waitFor({ timeout: 30_000 });
    await expect(panel.getByRole('cell', { name: `Sync ${sync.id} progress` }).textContent()).resolves.toMatch(
      /^\d+ seen: [1-9]\d* new/,
    );
    await page
      .getByTestId(`connection-${connection.id}`)
      .getByRole('cell', { name: /^succeeded · / })
      .waitFor();
    await panel.getByTestId('synced-object').first().waitFor();
    const objects = await owner.call(
      'connectors.objects',
      { path: { connection_id: connection.id }, query: {} },
      { projectId },
    );
    expect(objects.items.length).toBeGreaterThan(0);
    expect(await panel.getByTestId('synced-object').count()).toBe(objects.items.length);
    const synced = await new ServiceClient({ baseUrl, apiKey, projectId, maxRetries: 0 }).call(
      'memories.export',
      {},
      { endUserId: 'team-slack' },
    );
    expect(JSON.stringify(synced.memories)).toContain('Porto on June 12');
    await shot('15-connector-synced');
  });

  it('invites a viewer, who is shown no action that changes anything, and whom the server refuses', async () => {
    await page.getByRole('button', { name: 'Members' }).click();
    await page.getByRole('table', { name: 'Members' }).getByRole('cell', { name: EMAIL }).waitFor();
    await page.getByLabel('E-mail to invite').fill(VIEWER);
    await page.getByRole('combobox', { name: /^Role/ }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    const link = (await page.getByTestId('invitation-link').textContent())!;
    await page
      .getByRole('table', { name: 'Pending invitations' })
      .getByRole('cell', { name: VIEWER, exact: true })
      .waitFor();
    await shot('12-members-invited');
    const token = new URL(link).hash.replace(/^#token=/, '');
    await new ControlClient({ baseUrl, maxRetries: 0 }).members.acceptInvitation({ token, password: PASSWORD });
    expect((await owner.members.list({ limit: 100 })).items.find((m) => m.email === VIEWER)?.role).toBe('viewer');

    // The viewer in a tab of their own (the console keeps nothing between tabs: a second sign-in).
    const viewerPage = await browser.newPage();
    try {
      await viewerPage.goto(`${baseUrl}/console/`);
      await viewerPage.getByLabel('E-mail').fill(VIEWER);
      await viewerPage.getByLabel('Password').fill(PASSWORD);
      await viewerPage.getByRole('button', { name: 'Sign in' }).click();
      await viewerPage.getByRole('heading', { name: 'Memories' }).waitFor();
      await viewerPage.getByRole('combobox', { name: 'Project' }).selectOption(projectId);
      // No key of their own to create: they paste one they were given.
      await viewerPage.getByLabel('API key', { exact: true }).waitFor();
      await expect(
        viewerPage.getByRole('button', { name: 'Use a temporary console key (1 hour)' }).count(),
      ).resolves.toBe(0);
      await viewerPage.getByLabel('API key', { exact: true }).fill(apiKey);
      await viewerPage.getByRole('button', { name: 'Use this key' }).click();
      await viewerPage.getByRole('textbox', { name: 'End user', exact: true }).fill(END_USER);
      await viewerPage.getByRole('button', { name: 'Show memories' }).click();
      await viewerPage.getByRole('button', { name: 'Ada lives in Lisbon' }).click();
      await viewerPage
        .getByRole('region', { name: /^Memory / })
        .getByRole('heading', { name: 'History' })
        .waitFor();
      await expect(viewerPage.getByRole('button', { name: 'Forget…' }).count()).resolves.toBe(0);
      await viewerPage.getByRole('button', { name: 'Members' }).click();
      await viewerPage.getByRole('table', { name: 'Members' }).getByRole('cell', { name: VIEWER }).waitFor();
      await expect(viewerPage.getByLabel('E-mail to invite').count()).resolves.toBe(0);
      await viewerPage.getByRole('button', { name: 'Connectors' }).click();
      await viewerPage.getByRole('cell', { name: 'Team Slack', exact: true }).waitFor();
      await expect(viewerPage.getByRole('form', { name: 'Add a connection' }).count()).resolves.toBe(0);
      await viewerPage.getByRole('button', { name: 'Open Team Slack' }).click();
      await viewerPage.getByRole('heading', { name: 'Synced objects', exact: false }).waitFor();
      await expect(viewerPage.getByRole('button', { name: 'Sync now' }).count()).resolves.toBe(0);
      await expect(viewerPage.getByRole('button', { name: 'Remove…' }).count()).resolves.toBe(0);
      await viewerPage.getByRole('button', { name: 'Keys' }).click();
      // The Keys page drawn (its heading and key list) before looking for what it must not offer.
      await viewerPage.getByRole('heading', { name: 'Keys' }).waitFor();
      await viewerPage.getByRole('cell', { name: 'console test key', exact: true }).waitFor();
      await expect(viewerPage.getByRole('button', { name: 'Create key' }).count()).resolves.toBe(0);
      await expect(viewerPage.getByRole('button', { name: 'Revoke' }).count()).resolves.toBe(0);
      await viewerPage.screenshot({ path: join(SHOTS, '13-viewer-keys.png'), fullPage: true });
    } finally {
      await viewerPage.close();
    }
    // Hidden buttons are a courtesy: the server refuses the viewer whatever the console shows.
    const viewer = new ControlClient({ baseUrl, maxRetries: 0 });
    await viewer.signIn(VIEWER, PASSWORD);
    const refused = await viewer.keys
      .create({ name: 'viewer key', project_id: projectId, scopes: ['memories:read'] })
      .then(
        () => 0,
        (e: EngramError) => e.status,
      );
    expect(refused).toBe(403);
    expect((await owner.keys.list({ limit: 100 })).items.some((k) => k.name === 'viewer key')).toBe(false);
  });

  it('shows the audit log and the plan', async () => {
    await page.getByRole('button', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'api_key.create' }).first().waitFor();
    await shot('08-audit-log');
    await page.getByRole('button', { name: 'Usage' }).click();
    await page.getByText(/^Plan /).waitFor();
    await shot('09-usage');
  });
});
