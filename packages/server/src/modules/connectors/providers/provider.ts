import type { TObject } from '@sinclair/typebox';
import type { OutboundRequest, OutboundResponse } from '../../../core/outbound.js';

/**
 * One interface for every connector provider (one file each in this folder, listed in index.ts).
 * A provider lists and fetches what the connection's configuration selects; the framework
 * (../sync.ts) decides what is new, changed, unchanged or gone, writes memories, counts and
 * checkpoints.
 */

export type AuthKind = 'none' | 'access_keys' | 'api_key' | 'oauth2';

/** How a provider's OAuth 2.0 consent works (authorization code grant, RFC 6749); ../oauth.ts runs it. */
export interface OAuthSpec {
  authorizeUrl: string;
  tokenUrl: string;
  scopes: string[];
  /** How the consent URL joins scopes (RFC 6749: space; Slack: comma). */
  scopeSeparator: ' ' | ',';
  /** Whether the provider takes RFC 7636 PKCE (S256). */
  pkce: boolean;
  /** Further consent URL parameters (Google: offline access, so a refresh token is issued). */
  authorizeParams?: Record<string, string>;
}

export interface ProviderInfo {
  name: string;
  title: string;
  description: string;
  authKind: AuthKind;
  /** JSON Schema of the configuration (what to read); the configuration page serves it. */
  configSchema: TObject;
  /** JSON Schema of the credentials; null when the provider needs none. */
  credentialsSchema: TObject | null;
  capabilities: string[];
  /** OAuth consent (authKind oauth2). */
  oauth?: OAuthSpec;
}

interface SourceObjectBase {
  /** Stable id at the source (URL, object key, message ts). */
  sourceId: string;
  /** The source's version (ETag, Last-Modified), compared on the next sync before fetching. */
  version: string | null;
  title?: string;
  url?: string;
}

/** A document, read by the upload pipeline (type detection, parser, chunks). */
export interface SourceFile extends SourceObjectBase {
  /** File name used to detect the type. */
  name: string;
  mediaType?: string;
  bytes: Buffer;
}

/** A statement the source already delimits (a chat message, a transcript turn): one memory each. */
export interface SourceStatement {
  text: string;
  /** When it was said or written (ISO 8601): the memory's time. */
  time: string;
  speaker?: string;
  /** The conversation it belongs to (channel, meeting): narrows retrieval like a session. */
  sessionId?: string;
  metadata: Record<string, unknown>;
}

export interface SourceRecord extends SourceObjectBase {
  statements: SourceStatement[];
}

/** One object at the source, fetched. */
export type SourceObject = SourceFile | SourceRecord;

/** A vendor's OAuth tokens, refreshed and stored by the framework (../oauth.ts). */
export interface OAuthAccess {
  /** A live access token, refreshed first when it expires within a minute. */
  accessToken(): Promise<string>;
  /** Refreshes now (the vendor answered 401 or "expired"); throws ConsentRevoked when the grant is gone. */
  refresh(): Promise<string>;
}

/** What validate and sync reach the source with. */
export interface SourceAccess<Config = Record<string, unknown>, Credentials = Record<string, unknown> | null> {
  config: Config;
  /** Credentials the user gave (access keys, API key); null for OAuth providers, whose tokens are behind `oauth`. */
  credentials: Credentials;
  /** Outbound HTTP through the SSRF guard. */
  fetch(url: string | URL, request?: OutboundRequest): Promise<OutboundResponse>;
  /** A vendor URL with the configured base (ENGRAM_<PROVIDER>_BASE_URL) in place of its origin. */
  endpoint(url: string): URL;
  /** The connection's OAuth tokens (oauth2 providers only). */
  oauth: OAuthAccess | null;
  /** Waits (a vendor's Retry-After); in a sync it keeps the job's lease and stops for a cancel. */
  pause(ms: number): Promise<void>;
}

export interface SyncRun<Config = Record<string, unknown>, Credentials = Record<string, unknown> | null>
  extends SourceAccess<Config, Credentials> {
  /** Where an interrupted run of this sync got to (null on a fresh start). */
  checkpoint: unknown;
  /** The provider's cursor after the last complete sync (null before the first). */
  cursor: unknown;
  /**
   * Whether the object is known at this version (and not yet handled by this run); a provider
   * skips fetching such an object. Marks it as seen either way.
   */
  unchanged(sourceId: string, version: string | null): Promise<boolean>;
  /** Hands over a fetched object: stored, replaced or skipped by content hash. */
  object(object: SourceObject): Promise<void>;
  /** Records an object that could not be fetched; its memories stay as they were. */
  failed(sourceId: string, reason: string): Promise<void>;
  /** The source reports the object deleted (an incremental run): its memories are forgotten now. */
  gone(sourceId: string): Promise<void>;
  /** Saves where the run is, so a crash resumes from here. */
  saveCheckpoint(state: unknown): Promise<void>;
}

export interface SyncEnd {
  /** The run saw the whole selection: objects not seen are gone at the source and are forgotten. */
  complete: boolean;
  cursor?: unknown;
}

/** A configuration or credential problem the user must fix (400 on create/update/repair; the connection's error state on sync). */
export class ProviderConfigError extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The user withdrew the consent (or the grant expired for good): the connection needs consent again (`needs_repair`). */
export class ConsentRevoked extends Error {}

export interface ConnectorProvider extends ProviderInfo {
  /** Checks that the configuration and credentials work (reaches the source); throws ProviderConfigError or ConsentRevoked. */
  validate(run: SourceAccess): Promise<void>;
  sync(run: SyncRun): Promise<SyncEnd>;
}
