// The project's ontology (this module owns the `ontologies` table): read, replace, and the extractor it compiles to.
import { checkOntology, DEFAULT_ONTOLOGY, Extractor, type Ontology } from '../../engine/nlp/index.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { invalid } from '../../core/errors.js';
import { enqueueJob, getJob, type JobView } from '../../jobs/runner.js';
import { decodeJson, encodeJson, type Database, type Executor } from '../../store/database.js';
import { prepared } from '../../store/prepared.js';

export const RECLASSIFY_JOB = 'ontology.reclassify';

export interface StoredOntology {
  ontology: Ontology;
  /** 0 while the project uses the default ontology; bumped by every replacement. */
  revision: number;
  updated_at: string | null;
  reclassification: JobView | null;
}

const revisionRow = prepared(1, (db, projectId: string) =>
  db.selectFrom('ontologies').select('revision').where('project_id', '=', projectId),
);

export async function ontologyRevision(db: Executor, projectId: string): Promise<number> {
  const [row] = await revisionRow(db, projectId);
  return row?.revision ?? 0;
}

export async function readOntology(db: Executor, projectId: string): Promise<StoredOntology> {
  const row = await db.selectFrom('ontologies').selectAll().where('project_id', '=', projectId).executeTakeFirst();
  if (!row) return { ontology: DEFAULT_ONTOLOGY, revision: 0, updated_at: null, reclassification: null };
  const job =
    row.reclassify_job_id === null ? undefined : await getJob(db, row.reclassify_job_id, projectId, RECLASSIFY_JOB);
  return {
    ontology: decodeJson<Ontology>(row.document),
    revision: row.revision,
    updated_at: row.updated_at,
    reclassification: job ?? null,
  };
}

/** Replaces the project's ontology after checking its references, and queues the reclassification of its memories. */
export async function replaceOntology(
  database: Database,
  ctx: WriteContext,
  projectId: string,
  ontology: Ontology,
): Promise<number> {
  const problem = checkOntology(ontology);
  if (problem) throw invalid(problem.field, problem.message);
  return write(database, ctx, async (trx, effects) => {
    const jobId = await enqueueJob(trx, { kind: RECLASSIFY_JOB, projectId, payload: {} });
    const row = await trx
      .insertInto('ontologies')
      .values({
        project_id: projectId,
        document: encodeJson(ontology),
        revision: 1,
        reclassify_job_id: jobId,
        updated_at: effects.now,
      })
      .onConflict((oc) =>
        oc.column('project_id').doUpdateSet((eb) => ({
          document: encodeJson(ontology),
          revision: eb('ontologies.revision', '+', 1),
          reclassify_job_id: jobId,
          updated_at: effects.now,
        })),
      )
      .returning('revision')
      .executeTakeFirstOrThrow();
    effects.audit('ontology.update', { type: 'ontology', id: projectId });
    effects.emit('ontology.updated', { revision: row.revision, job_id: jobId });
    return row.revision;
  });
}

/** Compiled extractors by project and ontology revision (a few projects are active at once). */
export class Extractors {
  private readonly byProject = new Map<string, { revision: number; extractor: Extractor }>();
  private readonly fallback = new Extractor(DEFAULT_ONTOLOGY);

  constructor(private readonly database: Database) {}

  async forProject(projectId: string, revision: number): Promise<Extractor> {
    if (revision === 0) return this.fallback;
    const cached = this.byProject.get(projectId);
    if (cached?.revision === revision) return cached.extractor;
    const { ontology, revision: stored } = await readOntology(this.database.db, projectId);
    const extractor = new Extractor(ontology);
    if (this.byProject.size > 1000) this.byProject.clear();
    this.byProject.set(projectId, { revision: stored, extractor });
    return extractor;
  }
}
