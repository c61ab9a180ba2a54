import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { CallOptions, Login, TestApp } from './harness.js';
import { until } from './until.js';

/** Helpers for connector tests: bearer calls scoped to the test project, waiting for syncs, a local HTTP site. */

export function connectorsClient(t: TestApp, owner: Login) {
  const call = (method: string, url: string, options: CallOptions = {}) =>
    t.call(method, url, {
      token: owner.token,
      ...options,
      headers: { 'x-project-id': t.projectId, ...options.headers },
    });
  return {
    call,
    async create(body: Record<string, unknown>) {
      const res = await call('POST', '/connectors/connections', { body });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: number };
    },
    async sync(connectionId: number) {
      const res = await call('POST', `/connectors/connections/${connectionId}/sync`);
      expect(res.status, res.text).toBe(202);
      return res.body as { id: number };
    },
    waitForSync(syncId: number) {
      return until(
        async () => {
          const res = await call('GET', `/connectors/syncs/${syncId}`);
          expect(res.status, res.text).toBe(200);
          return ['succeeded', 'failed', 'cancelled'].includes(res.body.status) ? res.body : undefined;
        },
        `sync ${syncId} to finish`,
        20_000,
      );
    },
    async objects(connectionId: number) {
      const res = await call('GET', `/connectors/connections/${connectionId}/objects?limit=100`);
      expect(res.status, res.text).toBe(200);
      return res.body.items as Array<{
        source_id: string;
        status: string;
        memory_ids: number[];
        version: string | null;
        url: string | null;
      }>;
    },
  };
}

export interface LocalSite {
  base: string;
  /** path -> [status, content type, body]; change it between syncs. */
  pages: Map<string, [number, string, string]>;
  requests: string[];
  close(): Promise<void>;
}

/** A website on 127.0.0.1 served from a map the test changes. */
export async function startSite(pages: Record<string, [number, string, string]>): Promise<LocalSite> {
  const map = new Map(Object.entries(pages));
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    const page = map.get(req.url ?? '') ?? [404, 'text/plain', 'not found'];
    res.writeHead(page[0], { 'content-type': page[1] });
    res.end(page[2]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    pages: map,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** Plays the user's browser at the provider's consent page: the consent URL answers a redirect to the app with `code` and `state`. */
export async function consentAt(
  authorizationUrl: string,
): Promise<{ code: string | null; state: string | null; error: string | null; redirect: URL }> {
  const response = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const redirect = new URL(response.headers.get('location')!);
  return {
    code: redirect.searchParams.get('code'),
    state: redirect.searchParams.get('state'),
    error: redirect.searchParams.get('error'),
    redirect,
  };
}
