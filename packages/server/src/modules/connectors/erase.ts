import { sql, type SqlBool } from 'kysely';
import { ownersOfMemories, type Erasure } from '../memories/index.js';
import type { Database, Executor } from '../../store/database.js';

/**
 * The erase hook of synced objects (registered in services.ts): forgetting a memory a connector brought in
 * erases its object's title and URL (a note's title, a file's name: the source's content) in the same
 * transaction; the object keeps its id at the source and its memory ids. The next sync reads the object again
 * (one of its memories is gone) and with it the title, as long as the source still holds it.
 */
export function eraseSyncedObjectTitles(database: Database) {
  return async (trx: Executor, ids: number[], erasure: Erasure): Promise<void> => {
    if (ids.length === 0) return;
    // Only connections of the memories' owners: most forgotten memories have none, and nothing more is read.
    const owners = new Map(
      (await ownersOfMemories(trx, ids)).map((o) => [`${o.project_id}\n${o.end_user_id}`, o] as const),
    );
    const connections = await trx
      .selectFrom('connector_connections')
      .select('id')
      .where((eb) =>
        eb.or(
          [...owners.values()].map((o) =>
            eb.and([eb('project_id', '=', o.project_id), eb('end_user_id', '=', o.end_user_id)]),
          ),
        ),
      )
      .execute();
    if (connections.length === 0) return;
    const holds =
      database.dialect === 'postgres'
        ? sql<SqlBool>`EXISTS (SELECT 1 FROM jsonb_array_elements_text(connector_objects.memory_ids) AS held(id)
            WHERE held.id::bigint = ANY(${sql.val(ids)}::bigint[]))`
        : sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(connector_objects.memory_ids) WHERE json_each.value IN (${sql.join(ids)}))`;
    await trx
      .updateTable('connector_objects')
      .set({ title: null, url: null, updated_at: erasure.effects.now })
      .where(
        'connection_id',
        'in',
        connections.map((c) => c.id),
      )
      .where((eb) => eb.or([eb('title', 'is not', null), eb('url', 'is not', null)]))
      .where(holds)
      .execute();
  };
}
