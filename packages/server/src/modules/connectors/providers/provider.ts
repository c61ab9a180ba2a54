import type { TObject } from '@sinclair/typebox';
import type { OutboundRequest, OutboundResponse } from '../../../core/outbound.js';

/**
 * One interface for every connector provider (one file each in this folder, listed in index.ts).
 * A provider lists and fetches what the connection's configuration selects; the framework
 * (../sync.ts) decides what is new, changed, unchanged or gone, writes memories, counts and
 * checkpoints.
 */

export type AuthKind = 'none' | 'access_keys' | 'oauth2';

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
}

/** One object at the source, fetched. */
export interface SourceObject {
  /** Stable id at the source (URL, object key). */
  sourceId: string;
  /** The source's version (ETag, Last-Modified), compared on the next sync before fetching. */
  version: string | null;
  /** File name used to detect the type. */
  name: string;
  mediaType?: string;
  title?: string;
  url?: string;
  bytes: Buffer;
}

export interface SyncRun<Config = Record<string, unknown>, Credentials = Record<string, unknown> | null> {
  config: Config;
  credentials: Credentials;
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
  /** Saves where the run is, so a crash resumes from here. */
  saveCheckpoint(state: unknown): Promise<void>;
  /** Outbound HTTP through the SSRF guard. */
  fetch(url: string | URL, request?: OutboundRequest): Promise<OutboundResponse>;
}

export interface SyncEnd {
  /** The run saw the whole selection: objects not seen are gone at the source and are forgotten. */
  complete: boolean;
  cursor?: unknown;
}

/** A configuration or credential problem the user must fix (400 on create/update/repair; the connection's error state on sync). */
export class ProviderConfigError extends Error {
  constructor(message: string, readonly field?: string) {
    super(message);
  }
}

export interface ConnectorProvider extends ProviderInfo {
  /** Checks that the configuration and credentials work (reaches the source); throws ProviderConfigError. */
  validate(run: Pick<SyncRun, 'config' | 'credentials' | 'fetch'>): Promise<void>;
  sync(run: SyncRun): Promise<SyncEnd>;
}
