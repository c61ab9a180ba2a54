import { CONTROL_PLANE_OPERATIONS } from './operations-control.js';
import { DATA_PLANE_OPERATIONS } from './operations-data.js';
import { INTEGRATION_OPERATIONS } from './operations-integrations.js';
import type { Declaration } from './probe-places.js';

/**
 * The probes' declaration table: for every operation of the served OpenAPI document, how to aim
 * a well-formed request at a resource of a given place, and what a permitted call answers. The
 * fuzz test takes its well-formed requests from here; the authorization matrix its cells. An
 * operation the document serves without an entry here fails both, so none is skipped silently.
 */
export const DECLARATIONS: Record<string, Declaration> = {
  ...DATA_PLANE_OPERATIONS,
  ...CONTROL_PLANE_OPERATIONS,
  ...INTEGRATION_OPERATIONS,
};

/** The served path with its parameters filled in. */
export function fillPath(path: string, params: Record<string, string | number> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`no value for path parameter ${name}`);
    return encodeURIComponent(String(params[name]));
  });
}

export function queryString(query: Record<string, string | number> = {}): string {
  const entries = Object.entries(query);
  return entries.length
    ? `?${entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&')}`
    : '';
}
