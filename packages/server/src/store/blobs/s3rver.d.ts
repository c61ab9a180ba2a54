// s3rver ships no types; the tests use this much of it.
declare module 's3rver' {
  import type { Server } from 'node:http';
  export default class S3rver {
    constructor(options: Record<string, unknown>);
    run(): Promise<unknown>;
    close(): Promise<void>;
    httpServer: Server;
    store: { listObjects(bucket: string, options: { prefix?: string }): Promise<{ objects: Array<{ key: string }> }> };
  }
}
