import type { ConnectorProvider } from './provider.js';
import { googleDrive } from './google-drive.js';
import { granola } from './granola.js';
import { objectStorage } from './object-storage.js';
import { slack } from './slack.js';
import { webCrawler } from './web-crawler.js';

/** The provider catalog: every provider the server knows, by name. */
export const PROVIDERS: readonly ConnectorProvider[] = [webCrawler, objectStorage, slack, googleDrive, granola];

export const providerNamed = (name: string): ConnectorProvider | undefined => PROVIDERS.find((p) => p.name === name);
