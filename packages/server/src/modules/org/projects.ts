import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, invalid, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { isUniqueViolation, type Database, type Executor } from '../../store/database.js';
import { tombstoneProjectMemories } from '../memories/index.js';
import { createProject, findProject, type Project } from './service.js';
import { credentialsChanged } from './resolved-keys.js';

/** Project lifecycle: list, create, change, soft-delete. */

export const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

export type ProjectView = Omit<Project, 'organization_id'>;

const view = ({ organization_id: _, ...rest }: Project): ProjectView => rest;

function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 56)
    .replace(/-+$/, '');
  return slug || 'project';
}

const slugTaken = () => new AppError('conflict', 'Another project of the organization has this slug', 'slug');

async function slugInUse(db: Executor, organizationId: string, slug: string, except?: string): Promise<boolean> {
  let query = db
    .selectFrom('projects')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('slug', '=', slug)
    .where('deleted_at', 'is', null);
  if (except) query = query.where('id', '<>', except);
  return (await query.executeTakeFirst()) !== undefined;
}

/** The unique index is the final word: a concurrent claim of the same slug is a 409 too. */
async function claimingSlug<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isUniqueViolation(error)) throw slugTaken();
    throw error;
  }
}

export function listProjects(db: Executor, organizationId: string, page: PageParams) {
  const query = db
    .selectFrom('projects')
    .select(['id', 'organization_id', 'name', 'slug', 'description', 'created_at', 'updated_at'])
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id');
  return paginate(query, page, view);
}

export async function getProject(db: Executor, organizationId: string, projectId: string): Promise<ProjectView> {
  const project = await findProject(db, organizationId, projectId);
  if (!project) throw notFound('Project');
  return view(project);
}

export async function addProject(
  database: Database,
  ctx: WriteContext,
  input: { name: string; slug?: string; description?: string },
): Promise<ProjectView> {
  if (input.slug !== undefined && !SLUG.test(input.slug))
    throw invalid('slug', 'slug must be lowercase letters, digits and inner hyphens, at most 64');
  return claimingSlug(() =>
    write(database, ctx, async (trx, effects) => {
      let slug = input.slug ?? slugify(input.name);
      if (input.slug !== undefined) {
        if (await slugInUse(trx, ctx.organizationId, slug)) throw slugTaken();
      } else {
        const base = slug;
        for (let n = 2; await slugInUse(trx, ctx.organizationId, slug); n++) slug = `${base}-${n}`;
      }
      const project = await createProject(trx, {
        organizationId: ctx.organizationId,
        name: input.name,
        slug,
        description: input.description,
      });
      effects.audit('project.create', { type: 'project', id: project.id });
      effects.emit('project.created', { project_id: project.id, name: project.name, slug: project.slug });
      return view(project);
    }),
  );
}

export async function updateProject(
  database: Database,
  ctx: WriteContext,
  projectId: string,
  patch: { name?: string; slug?: string; description?: string },
): Promise<ProjectView> {
  if (patch.slug !== undefined && !SLUG.test(patch.slug))
    throw invalid('slug', 'slug must be lowercase letters, digits and inner hyphens, at most 64');
  return claimingSlug(() =>
    write(database, { ...ctx, projectId }, async (trx, effects) => {
      const current = await findProject(trx, ctx.organizationId, projectId);
      if (!current) throw notFound('Project');
      const changed = (['name', 'slug', 'description'] as const).filter(
        (f) => patch[f] !== undefined && patch[f] !== current[f],
      );
      effects.audit('project.update', { type: 'project', id: projectId });
      if (changed.length === 0) return view(current);
      if (
        patch.slug !== undefined &&
        changed.includes('slug') &&
        (await slugInUse(trx, ctx.organizationId, patch.slug, projectId))
      ) {
        throw slugTaken();
      }
      const values = Object.fromEntries(changed.map((f) => [f, patch[f]!]));
      await trx
        .updateTable('projects')
        .set({ ...values, updated_at: effects.now })
        .where('id', '=', projectId)
        .execute();
      const updated = { ...current, ...values, updated_at: effects.now };
      effects.emit('project.updated', {
        project_id: projectId,
        changed,
        name: updated.name,
        slug: updated.slug,
        description: updated.description,
        updated_at: effects.now,
      });
      return view(updated);
    }),
  );
}

/** Soft-deletes the project and tombstones its memories: both answer 404 from then on. */
export async function deleteProject(
  database: Database,
  ctx: WriteContext,
  projectId: string,
): Promise<{ id: string; deleted_at: string; memories_tombstoned: number }> {
  try {
    return await softDelete(database, ctx, projectId);
  } finally {
    // Committed (or perhaps, after a failed COMMIT): no key resolved with this project is used again.
    credentialsChanged(database);
  }
}

function softDelete(
  database: Database,
  ctx: WriteContext,
  projectId: string,
): Promise<{ id: string; deleted_at: string; memories_tombstoned: number }> {
  return write(database, { ...ctx, projectId }, async (trx, effects) => {
    const deleted = await trx
      .updateTable('projects')
      .set({ deleted_at: effects.now, updated_at: effects.now })
      .where('id', '=', projectId)
      .where('organization_id', '=', ctx.organizationId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (Number(deleted.numUpdatedRows) === 0) throw notFound('Project');
    const tombstoned = await tombstoneProjectMemories(trx, projectId, effects.now);
    effects.audit('project.delete', { type: 'project', id: projectId });
    effects.emit('project.deleted', { project_id: projectId, memories_tombstoned: tombstoned });
    return { id: projectId, deleted_at: effects.now, memories_tombstoned: tombstoned };
  });
}
