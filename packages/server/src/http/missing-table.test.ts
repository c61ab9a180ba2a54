import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { upload } from '../testing/files.js';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { expectError } from '../testing/memories.js';
import { freshUser } from '../testing/retrieval.js';

/**
 * PostgreSQL's "relation does not exist" (42P01) is 503 database_unavailable only while the whole
 * schema is gone (a database re-created empty under the server: test/faults.test.ts); a table
 * missing from a migrated database is a bug, answered 500 and logged, never masked as an outage.
 */
forEachDialect('a missing table', (dialect) => {
  const t = useTestApp(dialect);
  const rename = (from: string, to: string) => sql.raw(`ALTER TABLE ${from} RENAME TO ${to}`).execute(t.database.db);
  const send = () => upload(t, { name: 'a.txt', content: 'A file to remember.' }, { endUser: freshUser() });

  it.skipIf(dialect === 'sqlite')(
    'is a 500 logged as an error while the schema is there, a 503 once it is gone',
    async () => {
      await rename('uploaded_files', 'uploaded_files_hidden');
      try {
        const bug = await send();
        expectError(bug, 500, 'internal_error');
        expect(t.logs.some((line) => line.includes('"unhandled error"') && line.includes('42P01'))).toBe(true);
        await rename('schema_migrations', 'schema_migrations_hidden');
        try {
          const gone = await send();
          expectError(gone, 503, 'database_unavailable');
          expect(gone.headers['retry-after']).toBe('1');
        } finally {
          await rename('schema_migrations_hidden', 'schema_migrations');
        }
      } finally {
        await rename('uploaded_files_hidden', 'uploaded_files');
      }
      expect((await send()).status).toBe(201);
    },
  );
});
