import { Type } from '@sinclair/typebox';

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const Organization = Type.Object({
  id: Type.String({ description: 'org_…' }),
  name: Type.String(),
  role: Type.String({ description: "The caller's role: owner, admin, member or viewer" }),
  created_at: Timestamp,
  current: Type.Boolean({ description: 'The organization this call acts in' }),
});
export const NewOrganizationBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

const Slug = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'Lowercase letters, digits and inner hyphens; unique in the organization',
});
const ProjectName = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 2000 });

export const ProjectParams = Type.Object({ project_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const Project = Type.Object({
  id: Type.String({ description: 'proj_…; never changes' }),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const ProjectPatch = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  updated_at: Timestamp,
});
export const NewProjectBody = Type.Object(
  { name: ProjectName, slug: Type.Optional(Slug), description: Type.Optional(Description) },
  { additionalProperties: false },
);
export const ProjectPatchBody = Type.Object(
  { name: Type.Optional(ProjectName), slug: Type.Optional(Slug), description: Type.Optional(Description) },
  { additionalProperties: false },
);
export const ProjectDeleted = Type.Object({
  id: Type.String(),
  deleted_at: Timestamp,
  memories_tombstoned: Type.Integer(),
});

export const KeyParams = Type.Object({ key_id: Type.Integer({ minimum: 1 }) });
const keyFields = {
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the secret, for recognising it' }),
  project_id: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  tenant_id: Nullable(Type.String()),
  end_user_id: Nullable(Type.String()),
  created_by: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  expires_at: Nullable(Timestamp),
  revoked_at: Nullable(Timestamp),
  last_used_at: Nullable(Timestamp),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]),
};
export const ApiKey = Type.Object(keyFields);
export const CreatedApiKey = Type.Object({
  ...keyFields,
  key: Type.String({ description: 'The secret; shown this once only' }),
});
export const NewApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    project_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Lock the key to this project' }),
    ),
    scopes: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 64, uniqueItems: true })),
    expires_at: Type.Optional(Type.String({ format: 'date-time' })),
    tenant_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Bind the key to one /v1 tenant' }),
    ),
    end_user_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Bind the key to one end user' }),
    ),
  },
  { additionalProperties: false },
);
export const ApiKeyTest = Type.Object({
  id: Type.Integer(),
  valid: Type.Boolean(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  prefix: Type.String(),
  project_id: Nullable(Type.String()),
  project_status: Type.Union([Type.Literal('none'), Type.Literal('active'), Type.Literal('deleted')]),
  scopes: Type.Array(Type.String()),
  tenant_id: Nullable(Type.String()),
  end_user_id: Nullable(Type.String()),
  expires_at: Nullable(Timestamp),
  last_used_at: Nullable(Timestamp),
  operations: Type.Array(Type.String(), { description: 'METHOD path of every operation the key may call' }),
});
export const BulkRevokeBody = Type.Object(
  { ids: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);
export const BulkRevokeResult = Type.Object({
  totals: Type.Object({ revoked: Type.Integer(), already_revoked: Type.Integer(), not_found: Type.Integer() }),
  results: Type.Array(
    Type.Object({
      id: Type.Integer(),
      status: Type.Union([Type.Literal('revoked'), Type.Literal('already_revoked'), Type.Literal('not_found')]),
    }),
  ),
});
