import { type Place, PLACES, type Credential, type Built, type World, placeHeaders } from './probe-places.js';

/** How a declaration aims its request at a place: the target builders the declaration tables share. */

export const dataTargets = {
  user: 'elsewhere',
  tenant: 'elsewhere',
  untenanted: 'elsewhere',
  project: 'elsewhere',
  org: 'elsewhere',
} as const;
/** Data-plane requests aimed at another end user or tenant by naming it in X-End-User-ID / X-Tenant-ID (or leaving it out). */
export const namedScope = { user: 'named', tenant: 'named', untenanted: 'named' } as const;
/** The /v1 plane names its tenant and user in the body or query; every /v1 request has a tenant. */
export const v1Named = { user: 'named', tenant: 'named' } as const;
export const onMemory =
  (extra: (w: World, place: Place) => Promise<Partial<Built>> = async () => ({})) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { memory_id: await w.memory(place) },
    headers: placeHeaders('own'),
    ...(await extra(w, place)),
  });
/** Where a request aimed at `place` lands: a tenant-bound key that sends no X-Tenant-ID writes in its own tenant. */
export const landing = (place: Place, c: Credential): Place =>
  place === 'untenanted' && c.bound?.tenant ? 'own' : place;
export const inPlace =
  (body?: (place: Place) => unknown, endUser = true) =>
  async (_w: World, place: Place, c: Credential): Promise<Built> => ({
    headers: placeHeaders(place, endUser),
    ...(body ? { body: body(landing(place, c)) } : {}),
  });
export const v1Body = (place: Place, rest: Record<string, unknown>) => ({
  tenant_id: PLACES[place].tenant,
  user_id: PLACES[place].endUser,
  ...rest,
});

/** X-Project-ID of the place's project, for bearer operations that act on one project. */
export const projectOf = (w: World, place: Place) => ({ 'x-project-id': w.ids[PLACES[place].project] });
export const onWebhook =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { endpoint_id: await w.webhook(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
export const onDelivery =
  () =>
  async (w: World, place: Place): Promise<Built> => {
    const { endpointId, deliveryId } = await w.delivery(PLACES[place].org);
    return { params: { endpoint_id: endpointId, delivery_id: deliveryId }, headers: projectOf(w, place) };
  };
export const onMember =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { user_id: await w.member(PLACES[place].org) },
    ...(body !== undefined ? { body } : {}),
  });
export const eventTypeOf = async (w: World) => {
  const res = await w.t.call('GET', '/org/webhooks/event-types', { token: w.ownerToken });
  return (res.body?.items?.[0]?.type as string | undefined) ?? 'memory.created';
};
export const onConnection =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.connection(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
/** A connection of its own (the call removes, purges or syncs it). */
export const onFreshConnection =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.connection(PLACES[place].org, true) },
    headers: projectOf(w, place),
  });
export const onSync =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { sync_id: (await w.sync(PLACES[place].org)).syncId },
    headers: projectOf(w, place),
  });
export const onOAuthConnection =
  (body?: unknown) =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { connection_id: await w.oauthConnection(PLACES[place].org) },
    headers: projectOf(w, place),
    ...(body !== undefined ? { body } : {}),
  });
export const inProject =
  () =>
  async (w: World, place: Place): Promise<Built> => ({ headers: projectOf(w, place) });
export const onExport =
  () =>
  async (w: World, place: Place): Promise<Built> => ({
    params: { id: await w.export(PLACES[place].org) },
    headers: projectOf(w, place),
  });

/** Another live session of the person behind a token (a fresh sign-in), for operations that end one. */
export async function ownSession(w: World, c: Credential): Promise<number> {
  if (c.kind !== 'bearer' || !c.relogin) return w.victimSession();
  const token = await c.relogin();
  const res = await w.t.call('GET', '/auth/sessions', { token });
  const current = (res.body?.items ?? []).find((s: { current: boolean }) => s.current);
  if (!current) throw new Error(`could not read the new session: ${res.status} ${res.text}`);
  return current.id as number;
}
