/**
 * The access catalogue: scopes a credential carries, capabilities a role grants. An operation
 * names the scope it needs (checked for API keys and bearer tokens alike) and, for bearer tokens,
 * the capability the caller's role in the organization must grant. Served at GET /auth/catalogue
 * and listed in docs/api.md.
 */

export const SCOPES = {
  'memories:read': 'Read, query and export memories',
  'memories:write': 'Add, change and forget memories',
  'projects:read': 'List and read projects',
  'projects:write': 'Create, change and delete projects',
  'keys:read': 'List and inspect API keys',
  'keys:write': 'Create and revoke API keys',
  'sessions:read': 'List sign-in sessions',
  'sessions:write': 'Revoke sign-in sessions',
  'organizations:read': 'List the organizations the caller belongs to',
  'organizations:write': 'Create organizations',
  'members:read': 'List the members of the organization',
  'members:write': 'Invite, change and remove members; issue password-reset links',
  'account:write': "Change the caller's own password",
  'webhooks:read': 'Read webhook endpoints and deliveries',
  'webhooks:write': 'Manage webhook endpoints and deliveries',
  'audit:read': 'Read the audit log',
  'billing:read': 'Read the current plan and usage',
  'exports:read': 'Read exports',
  'exports:write': 'Create and manage exports',
  'connectors:read': 'Read connector connections and synced objects',
  'connectors:write': 'Manage connector connections and syncs',
} as const;
export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];
export const DATA_PLANE_SCOPES = ['memories:read', 'memories:write'] as const satisfies readonly Scope[];
/**
 * Control-plane scopes an API key may carry besides the data plane, for automation (backups, deployments)
 * without a person's session. Never by default; and never on a key bound to a tenant or end user, whose
 * reach is narrower than the project these areas act on.
 */
export const KEY_CONTROL_SCOPES = [
  'exports:read',
  'exports:write',
  'webhooks:read',
  'webhooks:write',
  'connectors:read',
  'connectors:write',
  'members:read',
] as const satisfies readonly Scope[];

/** The scopes a key acts with: a key bound to a tenant or end user leaves the control-plane scopes above unused. */
export function keyScopes(key: {
  scopes: readonly string[];
  tenantId: string | null;
  endUserId: string | null;
}): readonly string[] {
  if (!key.tenantId && !key.endUserId) return key.scopes;
  const granted = key.scopes.includes('*') ? ALL_SCOPES : key.scopes;
  return granted.filter((s) => !(KEY_CONTROL_SCOPES as readonly string[]).includes(s));
}

export const CAPABILITIES = {
  'projects.read': 'See the projects of the organization',
  'projects.manage': 'Create, change and delete projects',
  'keys.read': 'See the API keys of the organization',
  'keys.manage': 'Create, test and revoke API keys',
  'members.read': 'See the members of the organization and their roles',
  'members.manage': 'Invite, change and remove members; issue password-reset links (owners only for owners)',
  'sessions.manage': "See and revoke the sessions of the organization's members",
  'webhooks.manage': 'Manage webhook endpoints',
  'audit.read': 'Read the audit log of the organization',
  'billing.read': 'Read the plan and usage of the organization',
  'exports.manage': 'Create and manage exports',
  'connectors.manage': 'Manage connectors',
} as const;
export type Capability = keyof typeof CAPABILITIES;
const ALL_CAPABILITIES = Object.keys(CAPABILITIES) as Capability[];

export const ROLES = {
  owner: ALL_CAPABILITIES,
  admin: ALL_CAPABILITIES,
  member: ['projects.read', 'keys.read', 'members.read', 'billing.read', 'exports.manage', 'connectors.manage'],
  viewer: ['projects.read', 'keys.read', 'members.read', 'billing.read'],
} as const satisfies Record<string, readonly Capability[]>;
export type Role = keyof typeof ROLES;

export function isRole(value: string): value is Role {
  return Object.hasOwn(ROLES, value);
}

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}

export function hasScope(granted: readonly string[], needed: string): boolean {
  return granted.includes(needed) || granted.includes('*');
}

export function roleGrants(role: string, capability: Capability): boolean {
  return isRole(role) && (ROLES[role] as readonly Capability[]).includes(capability);
}

/** One operation's access declaration, as listed in the catalogue (GET /auth/catalogue). */
export interface RouteAccess {
  method: string;
  path: string;
  accepts: string[];
  scope: string | null;
  capability: string | null;
}
