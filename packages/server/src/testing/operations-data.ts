import { PLACES, marker, type Built, type Declaration, uploadForm, nextSerial, placeHeaders } from './probe-places.js';
import { dataTargets, namedScope, v1Named, onMemory, landing, inPlace, v1Body } from './probe-targets.js';

/** Declarations of the data plane: memories, /v1, synthesis and intelligence, uploads. */

export const DATA_PLANE_OPERATIONS: Record<string, Declaration> = {
  // ---- data plane ----------------------------------------------------------------------------
  'POST /memory/add': {
    ok: 201,
    targets: namedScope,
    build: inPlace((p) => ({ text: `${marker(p)} added ${nextSerial()}` })),
  },
  'POST /memory/bulk-add': {
    ok: 200,
    targets: namedScope,
    build: inPlace((p) => [{ text: `${marker(p)} bulk ${nextSerial()}` }]),
  },
  'POST /memory/infer': {
    ok: 200,
    targets: namedScope,
    build: inPlace((p) => ({
      messages: [{ role: 'user', content: `My favorite color is ${marker(p)} ${nextSerial()}.` }],
    })),
  },
  'GET /memory': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), query: { total: 'true' } }),
  },
  'GET /memory/export': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place) }),
  },
  'POST /memory/batch-update': {
    ok: 200,
    targets: { ...dataTargets },
    refusedWith: 207,
    build: async (w, place) => ({
      headers: placeHeaders('own'),
      body: { updates: [{ id: await w.memory(place), importance: 0.9 }] },
    }),
  },
  'DELETE /memory/forget': {
    ok: 200,
    targets: { ...dataTargets },
    refusedWith: 200,
    build: async (w, place) => ({ headers: placeHeaders('own'), body: { ids: [await w.memory(place)] } }),
  },
  'DELETE /memory/user/{end_user_id}': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (
      await w.memory(place), { params: { end_user_id: PLACES[place].endUser }, headers: placeHeaders(place, false) }
    ),
  },
  'GET /memory/{memory_id}': { ok: 200, targets: dataTargets, build: onMemory() },
  'PATCH /memory/{memory_id}': {
    ok: 200,
    targets: dataTargets,
    build: onMemory(async () => ({ body: { importance: 0.8 } })),
  },
  'GET /memory/{memory_id}/history': { ok: 200, targets: dataTargets, build: onMemory() },
  'POST /memory/query': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { query: 'fact' } }),
  },
  'POST /memory/retrieve': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { prompt: 'fact' } }),
  },
  'POST /memory/search': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { query: 'fact' } }),
  },
  'POST /memory/compose': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (await w.memory(place), { headers: placeHeaders(place), body: { task: 'fact' } }),
  },
  'POST /memory/refresh': { ok: 202, targets: namedScope, build: inPlace() },
  'GET /memory/refresh/{job_id}': {
    ok: 200,
    targets: { user: 'named', tenant: 'named', untenanted: 'named', project: 'elsewhere', org: 'elsewhere' },
    // A job outside any tenant is outside a tenant-bound key's reach.
    override: (c, place) => (place === 'untenanted' && c.bound?.tenant ? 404 : undefined),
    build: async (w, place) => ({ params: { job_id: await w.job(place) }, headers: placeHeaders('own', false) }),
  },
  'POST /memory/{memory_id}/feedback': {
    ok: 201,
    targets: dataTargets,
    build: onMemory(async () => ({ body: { rating: 'negative' } })),
  },
  'GET /memory/{memory_id}/feedback': { ok: 200, targets: dataTargets, build: onMemory() },
  'DELETE /memory/{memory_id}/feedback/{feedback_id}': {
    ok: 200,
    targets: dataTargets,
    build: async (w, place) => {
      const { memoryId, feedbackId } = await w.feedback(place);
      return { params: { memory_id: memoryId, feedback_id: feedbackId }, headers: placeHeaders('own') };
    },
  },

  // ---- /v1 tenant plane: the tenant and user travel in the body or query ----------------------
  'POST /v1/memory/add_turn': {
    ok: 201,
    targets: v1Named,
    build: inPlace((p) => v1Body(p, { text: `${marker(p)} turn ${nextSerial()}`, speaker: 'user' }), false),
  },
  'POST /v1/memory/recall': {
    ok: 200,
    targets: v1Named,
    build: async (w, place) => (
      await w.memory(place), { headers: placeHeaders(place, false), body: v1Body(place, { query: 'fact' }) }
    ),
  },
  'GET /v1/memory/status': { ok: 200, targets: { tenant: 'named' }, build: inPlace(undefined, false) },
  'GET /v1/memory/memories': {
    ok: 200,
    targets: v1Named,
    // A key bound to an end user lists without naming one: the binding alone must narrow the list.
    build: async (w, place, c) => (
      await w.memory(place),
      {
        headers: placeHeaders(place, false),
        query: c.bound?.endUser && place === 'own' ? {} : { user_id: PLACES[place].endUser },
      } as Built
    ),
  },

  // ---- synthesis and intelligence (data plane) --------------------------------------------------
  'POST /memory/summarize': {
    ok: 201,
    targets: dataTargets,
    build: async (w, place) => ({ headers: placeHeaders('own'), body: { memory_ids: [await w.memory(place, true)] } }),
  },
  'POST /memory/relations': {
    ok: 201,
    targets: dataTargets,
    build: async (w, place) => {
      const target = await w.memory(place);
      return {
        headers: placeHeaders('own'),
        body: { source_id: await w.memory('own', true), target_id: target, type: 'related' },
      };
    },
  },
  'GET /memory/{memory_id}/relations': { ok: 200, targets: dataTargets, build: onMemory() },
  'DELETE /memory/relations/{relation_id}': {
    ok: 200,
    targets: dataTargets,
    build: async (w, place) => ({ params: { relation_id: await w.relation(place) }, headers: placeHeaders('own') }),
  },
  'POST /memory/synthesize': {
    ok: 200,
    targets: namedScope,
    build: async (w, place) => (
      await w.memory(place), { headers: placeHeaders(place), body: { question: 'which fact?' } }
    ),
  },
  'GET /memory/ontology': { ok: 200, build: inPlace(undefined, false) },
  'PUT /memory/ontology': {
    ok: 200,
    build: inPlace(() => ({ categories: [], entity_types: [], relation_types: [] }), false),
  },
  'GET /memory/graph': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/clusters': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/decisions': { ok: 200, targets: namedScope, build: inPlace() },
  // No conflict to resolve exists in the fixtures: a permitted call finds none (404); the cell still
  // checks who is refused (401/403) and that a refusal changes nothing.
  'POST /memory/decision/{decision_id}/resolve': {
    ok: 404,
    build: async () => ({ params: { decision_id: 1 }, headers: placeHeaders('own'), body: { resolution: 'dismiss' } }),
  },
  'GET /memory/intelligence': { ok: 200, targets: namedScope, build: inPlace() },
  'GET /memory/knowledge/stats': { ok: 200, targets: namedScope, build: inPlace() },

  // ---- file upload (data plane, multipart) -------------------------------------------------------
  'POST /memory/upload': {
    ok: 201,
    targets: namedScope,
    build: async (_w, place, c) => {
      const form = uploadForm(
        `probe-${nextSerial()}.txt`,
        `${marker(landing(place, c))} uploaded fact ${nextSerial()}`,
      );
      return { headers: { ...placeHeaders(place), ...form.headers }, payload: form.payload };
    },
  },
  'GET /memory/upload/{job_id}': {
    ok: 200,
    targets: { user: 'named', tenant: 'named', untenanted: 'named', project: 'elsewhere', org: 'elsewhere' },
    // A job outside any tenant is outside a tenant-bound key's reach.
    override: (c, place) => (place === 'untenanted' && c.bound?.tenant ? 404 : undefined),
    build: async (w, place) => ({ params: { job_id: await w.uploadJob(place) }, headers: placeHeaders(place) }),
  },
};
