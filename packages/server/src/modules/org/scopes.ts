/** Scopes a credential can carry; an operation names the one it needs. */
export const DATA_PLANE_SCOPES = ['memories:read', 'memories:write'] as const;
export type Scope = (typeof DATA_PLANE_SCOPES)[number] | (string & {});

export function hasScope(granted: readonly string[], needed: string): boolean {
  return granted.includes(needed) || granted.includes('*');
}
