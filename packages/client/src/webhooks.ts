/**
 * Verifies a webhook delivery as the server signs it (Standard Webhooks, modules/webhooks):
 * `webhook-signature` holds `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`
 * under the endpoint's whsec_ secret, one per active secret (two while a rotated one overlaps).
 * Web Crypto, so it runs in Node and in browsers.
 */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

export interface WebhookEvent {
  id: string;
  type: string;
  [field: string]: unknown;
}

/** Answer a delivery older or newer than this (seconds) as a replay. */
const DEFAULT_TOLERANCE_SECONDS = 300;

export async function verifyWebhook(input: {
  /** The raw request body, exactly as received. */
  payload: string | Uint8Array;
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The endpoint's secret (whsec_...). */
  secret: string;
  toleranceSeconds?: number;
  /** For tests: the time to check the timestamp against. */
  now?: Date;
}): Promise<WebhookEvent> {
  const header = (name: string) => {
    const value =
      input.headers instanceof Headers
        ? input.headers.get(name)
        : (input.headers[name] ?? input.headers[name.toLowerCase()]);
    return Array.isArray(value) ? value[0] : (value ?? undefined);
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  const now = (input.now ?? new Date()).getTime() / 1000;
  if (!Number.isInteger(seconds) || Math.abs(now - seconds) > (input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError('The webhook timestamp is outside the tolerance');
  }
  const body = typeof input.payload === 'string' ? input.payload : new TextDecoder().decode(input.payload);
  const key = await crypto.subtle.importKey(
    'raw',
    base64Bytes(input.secret.replace(/^whsec_/, '')),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const candidate of signatures.split(' ')) {
    const [version, signature] = candidate.split(',');
    if (version !== 'v1' || !signature) continue;
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, base64Bytes(signature), signed))
      return JSON.parse(body) as WebhookEvent;
  }
  throw new WebhookVerificationError('No webhook signature matches the secret');
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
