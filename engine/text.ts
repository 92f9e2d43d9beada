// Character helpers. SPEC "Conventions": a character is a Unicode code point, not a UTF-16 code unit.
// Every helper has an O(1) fast path for strings whose UTF-16 length already decides the answer, so hot
// paths never walk long strings just to learn they are long.

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Number of code points of `s`. */
export function codePointLength(s: string): number {
  let count = 0;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    if (isHighSurrogate(s.charCodeAt(i)) && i + 1 < len && isLowSurrogate(s.charCodeAt(i + 1))) i++;
    count++;
  }
  return count;
}

/** `codePointLength(s) > limit`, without walking more than needed. */
export function longerThan(s: string, limit: number): boolean {
  if (s.length <= limit) return false;
  if (s.length > 2 * limit) return true;
  return codePointLength(s) > limit;
}

/** UTF-16 offset just after the first `count` code points of `s` (s.length when it has fewer). */
function offsetAfterCodePoints(s: string, count: number): number {
  let i = 0;
  let seen = 0;
  const len = s.length;
  while (i < len && seen < count) {
    i += isHighSurrogate(s.charCodeAt(i)) && i + 1 < len && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1;
    seen++;
  }
  return i;
}

/** UTF-16 offset where the last `count` code points of `s` begin (0 when it has fewer). */
function offsetOfLastCodePoints(s: string, count: number): number {
  let i = s.length;
  let seen = 0;
  while (i > 0 && seen < count) {
    i -= i >= 2 && isLowSurrogate(s.charCodeAt(i - 1)) && isHighSurrogate(s.charCodeAt(i - 2)) ? 2 : 1;
    seen++;
  }
  return i;
}

/** The first `count` code points of `s`. */
export function firstCodePoints(s: string, count: number): string {
  if (s.length <= count) return s;
  return s.slice(0, offsetAfterCodePoints(s, count));
}

/** The last `count` code points of `s`. */
export function lastCodePoints(s: string, count: number): string {
  if (s.length <= count) return s;
  return s.slice(offsetOfLastCodePoints(s, count));
}

/** Cut to `limit` code points and append `suffix` when something was cut (SPEC §18.5). */
export function cutWithSuffix(s: string, limit: number, suffix = '...'): string {
  return longerThan(s, limit) ? firstCodePoints(s, limit) + suffix : s;
}

/** Whitespace runs collapsed to one space, both ends trimmed (SPEC §9.5, §18.5). */
export function collapseWhitespace(s: string): string {
  // Most texts have nothing to collapse: check that first (one pass, no new string).
  return NEEDS_COLLAPSE.test(s) ? s.replace(/\s+/g, ' ').trim() : s;
}

/** Whitespace other than single spaces between words: a leading or trailing one, a run, or a tab, newline, etc. */
const NEEDS_COLLAPSE = /^\s|\s$|\s\s|[^\S ]/;
