import type { Config } from '../config.js';
import type { TestApp } from './harness.js';

/** The probes' places, credentials and declaration shapes, and the helpers every declaration builds requests with. */

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
  const boundary = `probe${nextSerial()}boundary`;
  const payload = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n${text}\r\n--${boundary}--\r\n`,
  );
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export const PASSWORD = 'correct horse battery';
let serial = 0;
/** A number not handed out before in this process, for fixture names and texts that must differ. */
export const nextSerial = () => serial++;
/** Scope headers of a place, as a data-plane request sends them. */
export const placeHeaders = (place: Place, endUser = true): Record<string, string> => ({
  ...(PLACES[place].tenant ? { 'x-tenant-id': PLACES[place].tenant } : {}),
  ...(endUser ? { 'x-end-user-id': PLACES[place].endUser } : {}),
});
