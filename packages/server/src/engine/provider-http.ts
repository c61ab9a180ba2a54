/** What the OpenAI-compatible clients (embeddings, chat completions) share about a provider's answers. */

/** Removes the API key from any text that came back from the provider, so it is never echoed. */
export const keyScrubber =
  (apiKey: string | undefined) =>
  (s: string): string =>
    apiKey ? s.split(apiKey).join('[redacted]') : s;

/** The provider's own error message from a failed answer's body (`{"error": {"message"}}` or `{"error": "..."}`), else its first 300 characters. */
export function errorDetail(body: string): string {
  const prefix = body.slice(0, 300);
  try {
    const j = JSON.parse(body) as { error?: { message?: string } | string };
    return typeof j.error === 'string' ? j.error : (j.error?.message ?? prefix);
  } catch {
    return prefix;
  }
}
