/**
 * A table looked up by words of untrusted input (a memory's text, a file's name or media type, a header's name):
 * without a prototype, so "constructor", "toString" or "__proto__" find nothing where a plain object literal hands
 * back Object.prototype's members ("I'm a constructor fan" read as a function).
 */
export const lookupTable = <T>(entries: Record<string, T>): Record<string, T> =>
  Object.assign(Object.create(null) as Record<string, T>, entries);
