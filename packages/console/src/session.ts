import { type CallOptions, ControlClient, EngramError, ServiceClient } from '@engram/client';

/**
 * The signed-in session lives in this module's memory only: no token is written to localStorage,
 * sessionStorage, a cookie or a URL, so a script injected into another page or tab cannot read it,
 * and closing or reloading the tab signs out. The client refreshes the access token before it expires.
 */
export interface Session {
  control: ControlClient;
  email: string;
}

const baseUrl = () => window.location.origin;

export async function signIn(email: string, password: string): Promise<Session> {
  const control = new ControlClient({ baseUrl: baseUrl(), maxRetries: 1 });
  await control.signIn(email, password);
  return { control, email };
}

/** The data plane takes an API key (docs/api.md, "The console"); the key is held in memory like the tokens. */
export function serviceFor(apiKey: string, projectId: string | undefined): ServiceClient {
  return new ServiceClient({ baseUrl: baseUrl(), apiKey, maxRetries: 1, ...(projectId ? { projectId } : {}) });
}

export function messageOf(error: unknown): string {
  if (error instanceof EngramError) return `${error.message}${error.field ? ` (${error.field})` : ''}`;
  return error instanceof Error ? error.message : String(error);
}

/** Where the console acts: the organization (X-Organization-ID) and project (X-Project-ID) chosen in the header. */
export interface Scope {
  organizationId: string;
  projectId: string | undefined;
  role: string;
}

export const callOptions = (scope: Scope): CallOptions => ({
  organizationId: scope.organizationId,
  ...(scope.projectId ? { projectId: scope.projectId } : {}),
});

const CAPABILITIES: Record<string, string[]> = {
  member: ['projects.read', 'keys.read', 'billing.read', 'members.read', 'exports.manage', 'connectors.manage'],
  viewer: ['projects.read', 'keys.read', 'billing.read', 'members.read'],
};

/** What the role allows (docs/api.md's table); it only hides buttons: the server decides. */
export const can = (scope: Scope, capability: string): boolean =>
  scope.role === 'owner' || scope.role === 'admin' || (CAPABILITIES[scope.role] ?? []).includes(capability);
