/**
 * JSON with object keys sorted at every level: equal documents give equal text whatever their key
 * order (PostgreSQL jsonb reorders keys), so it serves comparisons and fingerprints. Like
 * JSON.stringify, `undefined` alone gives undefined, in an array null, in an object nothing.
 */
export function canonicalJson(value: unknown): string | undefined {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.keys(value)
      .sort()
      .flatMap((k) => {
        const text = canonicalJson((value as Record<string, unknown>)[k]);
        return text === undefined ? [] : [`${JSON.stringify(k)}:${text}`];
      });
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value);
}
