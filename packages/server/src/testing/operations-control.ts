import { PLACES, type Declaration, PASSWORD, nextSerial } from './probe-places.js';
import { projectOf, onMember, onExport, ownSession } from './probe-targets.js';

/** Declarations of the control plane: public endpoints, sessions, organizations and keys, exports and imports, people. */

export const CONTROL_PLANE_OPERATIONS: Record<string, Declaration> = {
  'GET /healthz': { public: true },
  'GET /readyz': { public: true },
  'GET /auth/catalogue': { public: true },
  'POST /auth/login': { public: true, build: async (w) => ({ body: { email: w.t.email, password: w.t.password } }) },
  'POST /auth/refresh': { public: true },

  // ---- sessions --------------------------------------------------------------------------------
  'POST /auth/logout': { ok: 200, owner: 'caller', consumesSession: true, build: async () => ({}) },
  'GET /auth/sessions': { ok: 200, owner: 'caller', build: async () => ({}) },
  'POST /auth/sessions/{session_id}/revoke': {
    ok: 200,
    owner: 'caller',
    targets: { user: 'elsewhere' },
    build: async (w, place, c) => ({
      params: { session_id: place === 'own' ? await ownSession(w, c) : await w.victimSession() },
    }),
    // Another person's session: only an admin or owner of the organization it belongs to may end it.
    override: (c, place) =>
      place === 'user' && c.kind === 'bearer' && c.org === 'A' && (c.role === 'owner' || c.role === 'admin')
        ? 200
        : undefined,
  },

  // ---- control plane ---------------------------------------------------------------------------
  'POST /organizations': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { name: `probe organization ${nextSerial()}` } }),
  },
  'GET /organizations': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/projects': { ok: 200, owner: 'caller', build: async () => ({}) },
  'POST /org/projects': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { name: `probe project ${nextSerial()}` } }),
  },
  'GET /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { project_id: await w.project(PLACES[place].org) } }),
  },
  'PATCH /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      params: { project_id: place === 'own' ? w.ids.P : w.ids.PB },
      body: { description: `probe ${nextSerial()}` },
    }),
  },
  'DELETE /org/projects/{project_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { project_id: await w.project(PLACES[place].org) } }),
  },
  'POST /org/api-keys': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { name: `probe key ${nextSerial()}` } }),
  },
  'GET /org/api-keys': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/api-keys/{key_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'DELETE /org/api-keys/{key_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'POST /org/api-keys/{key_id}/test': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { key_id: await w.apiKey(PLACES[place].org) } }),
  },
  'POST /org/api-keys/bulk-revoke': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    refusedWith: 200,
    build: async (w, place) => ({ body: { ids: [await w.apiKey(PLACES[place].org)] } }),
  },

  // ---- exports and imports (bearer, X-Project-ID names the project) ----------------------------
  'POST /exports': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place), body: {} }),
  },
  'GET /exports': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /exports/{id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  'DELETE /exports/{id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  // The fixture export has completed: a permitted cancel answers 409 (nothing left to cancel).
  'POST /exports/{id}/cancel': { ok: 409, owner: 'organization', targets: { org: 'elsewhere' }, build: onExport() },
  'GET /exports/{id}/download': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    readsProject: true,
    build: onExport(),
  },
  'POST /imports': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place), body: { memories: [] } }),
  },
  'GET /imports': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /imports/{id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { id: await w.import(PLACES[place].org) }, headers: projectOf(w, place) }),
  },
  // The fixture import has finished: a permitted cancel answers 409.
  'POST /imports/{id}/cancel': {
    ok: 409,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { id: await w.import(PLACES[place].org) }, headers: projectOf(w, place) }),
  },

  // ---- people ------------------------------------------------------------------------------------
  'POST /invitations/accept': { public: true },
  'POST /auth/password/reset': { public: true },
  'POST /org/invitations': {
    ok: 201,
    owner: 'caller',
    build: async () => ({ body: { email: `invited-${nextSerial()}@example.com`, role: 'viewer' } }),
  },
  'GET /org/invitations': { ok: 200, owner: 'caller', build: async () => ({}) },
  'DELETE /org/invitations/{invitation_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { invitation_id: await w.invitation(PLACES[place].org) } }),
  },
  'GET /org/members': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/members/{user_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onMember() },
  'PATCH /org/members/{user_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onMember({ role: 'member' }),
  },
  'DELETE /org/members/{user_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onMember() },
  'POST /org/members/{user_id}/password-reset': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onMember(),
  },
  // Sets the same password again (so the person can still sign in); ends the caller's other sessions.
  'POST /auth/password': {
    ok: 200,
    owner: 'caller',
    consumesSession: true,
    endsOtherSessions: true,
    build: async () => ({ body: { current_password: PASSWORD, new_password: PASSWORD } }),
  },

  'GET /admin/team/audit-logs': { ok: 200, owner: 'caller', build: async () => ({}) },
  'GET /org/billing/current-plan': { ok: 200, owner: 'caller', build: async () => ({}) },
};
