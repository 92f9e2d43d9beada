// What PostgreSQL can store (the rule the edge validation and the store share, issue #9 §1): `text` and `jsonb`
// cannot hold U+0000, and an unpaired UTF-16 surrogate has no UTF-8 encoding (pg would silently turn it into
// U+FFFD). Message content keeps such characters losslessly (infra/db/messageRows.ts stores the exact JSON);
// metadata fields (titles, names, labels, model ids, queries) are refused at the edge instead.

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching U+0000 is the point of this pattern.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_GLOBAL = new RegExp(UNSTORABLE.source, 'g');

export const REPLACEMENT_CHARACTER = '\uFFFD';

/** True when PostgreSQL text/jsonb can hold `text` exactly. */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** `text` with every unstorable character replaced by U+FFFD (the code-unit length is unchanged). */
export function toStorableText(text: string): string {
  return isStorableText(text) ? text : text.replace(UNSTORABLE_GLOBAL, REPLACEMENT_CHARACTER);
}

/** True when any string or object key inside a JSON value is unstorable. Iterative: no recursion limit. */
export function hasUnstorableText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!isStorableText(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        if (!isStorableText(key)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}

/** A copy of a JSON value with every string and key made storable (values that need no change are shared). */
export function toStorableJson<T>(value: T): T {
  if (typeof value === 'string') return toStorableText(value) as T;
  if (Array.isArray(value)) return value.map((item) => toStorableJson(item)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[toStorableText(key)] = toStorableJson(item);
    return out as T;
  }
  return value;
}
