import type { ConnectorsConfig } from '../../config.js';
import type { OutboundPolicy } from '../../core/outbound.js';
import type { JobHandlers } from '../../jobs/runner.js';
import type { Database } from '../../store/database.js';
import type { DocumentReader } from '../ingest/index.js';
import type { EraseHooks } from '../memories/index.js';

/** What the connectors module's services need from the composition root. */
export interface SyncDeps {
  database: Database;
  jobs: JobHandlers;
  secret: Uint8Array;
  outbound: OutboundPolicy;
  erase: EraseHooks;
  connectors: ConnectorsConfig;
  /** Files a source holds are read as uploads are, in reading processes within the ENGRAM_PARSE_* bounds. */
  reader: DocumentReader;
}
