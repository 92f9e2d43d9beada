// `estimateTokensRough(JSON.stringify(value))` (SPEC §3.1, §3.2) computed without building the JSON text.
// The estimate only depends on two sums over the JSON text — the number of one-token CJK code points and the UTF-8
// byte length of every other code point — so it is additive over the pieces of the text. Strings are measured with
// native regular-expression scans on the common paths (plain ASCII, ASCII with a few escapes); anything JSON.stringify
// would treat specially (toJSON, non-plain prototypes, bigint, deep nesting or cycles) falls back to the real thing.

interface Tally {
  cjk: number;
  bytes: number;
}

/** Characters that need the exact walk: non-ASCII, and ASCII controls other than \t, \n and \r. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const NEEDS_EXACT_WALK = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u0080-\uffff]/;
const NON_ASCII = /[\u0080-\uffff]/;
/** The only characters left in an ASCII string that JSON writes as two characters. */
const TWO_CHAR_ESCAPES = ['"', '\\', '\n', '\t', '\r'] as const;
const MAX_DEPTH = 64;

class Unsupported extends Error {}

function isOneTokenCodePoint(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x11ff) ||
    (cp >= 0x2e80 && cp <= 0x9fff) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7af) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xff00 && cp <= 0xffef)
  );
}

/** Extra characters JSON.stringify adds for an ASCII control, quote or backslash. */
function escapeExtra(unit: number): number {
  if (unit === 0x22 || unit === 0x5c || unit === 0x08 || unit === 0x09 || unit === 0x0a) return 1;
  if (unit === 0x0c || unit === 0x0d) return 1;
  return 5; // \u00XX
}

function countOccurrences(s: string, char: string): number {
  let count = 0;
  for (let at = s.indexOf(char); at >= 0; at = s.indexOf(char, at + 1)) count++;
  return count;
}

/** ASCII string whose only escapes are two-character ones: its length plus one per escape (native scans). */
function asciiJsonLength(s: string): number {
  let length = s.length;
  for (const char of TWO_CHAR_ESCAPES) length += countOccurrences(s, char);
  return length;
}

/** Exact walk by code point (short or non-ASCII strings). */
function tallyMixedString(s: string, tally: Tally): void {
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const unit = s.charCodeAt(i);
    if (unit < 0x80) {
      tally.bytes += unit < 0x20 || unit === 0x22 || unit === 0x5c ? 1 + escapeExtra(unit) : 1;
    } else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < len && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      tally.bytes += 4;
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      tally.bytes += 6; // a lone surrogate is written as \udXXX
    } else if (isOneTokenCodePoint(unit)) {
      tally.cjk += 1;
    } else {
      tally.bytes += unit < 0x800 ? 2 : 3;
    }
  }
}

/** Below this length a plain loop beats the fixed cost of a regular-expression call. */
const SHORT_STRING = 48;

function tallyString(s: string, tally: Tally): void {
  tally.bytes += 2;
  if (s.length < SHORT_STRING || NEEDS_EXACT_WALK.test(s)) tallyMixedString(s, tally);
  else tally.bytes += asciiJsonLength(s);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Returns false when the value is omitted (undefined, functions, symbols). */
function tallyValue(value: unknown, tally: Tally, depth: number): boolean {
  switch (typeof value) {
    case 'string':
      tallyString(value, tally);
      return true;
    case 'number':
      tally.bytes += Number.isFinite(value) ? String(value).length : 4;
      return true;
    case 'boolean':
      tally.bytes += value ? 4 : 5;
      return true;
    case 'undefined':
    case 'function':
    case 'symbol':
      return false;
    case 'object':
      if (value === null) {
        tally.bytes += 4;
        return true;
      }
      tallyObject(value, tally, depth + 1);
      return true;
    default:
      throw new Unsupported();
  }
}

function tallyObject(value: object, tally: Tally, depth: number): void {
  if (depth > MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') throw new Unsupported();
  if (Array.isArray(value)) {
    tally.bytes += 2 + Math.max(0, value.length - 1);
    for (let i = 0; i < value.length; i++) if (!tallyValue(value[i], tally, depth)) tally.bytes += 4;
    return;
  }
  if (!isPlainObject(value)) throw new Unsupported();
  let members = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const mark = tally.bytes;
    const cjkMark = tally.cjk;
    tallyString(key, tally);
    if (tallyValue((value as Record<string, unknown>)[key], tally, depth)) {
      tally.bytes += 1; // ':'
      members++;
    } else {
      tally.bytes = mark;
      tally.cjk = cjkMark;
    }
  }
  tally.bytes += 2 + Math.max(0, members - 1);
}

/** Exact JSON text path, used for values the structural walk does not model. */
function tallyJsonText(json: string, tally: Tally): void {
  if (!NON_ASCII.test(json)) {
    tally.bytes += json.length;
    return;
  }
  for (let i = 0; i < json.length; i++) {
    const cp = json.codePointAt(i) as number;
    if (cp > 0xffff) i++;
    if (isOneTokenCodePoint(cp)) tally.cjk += 1;
    else tally.bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
}

/** `estimateTokensRough(JSON.stringify(value))`; 0 when JSON.stringify returns undefined. Throws when it throws. */
export function estimateJsonTokensRough(value: unknown): number {
  const tally: Tally = { cjk: 0, bytes: 0 };
  try {
    if (!tallyValue(value, tally, 0)) return 0;
  } catch (error) {
    if (!(error instanceof Unsupported)) throw error;
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) return 0;
    tally.cjk = 0;
    tally.bytes = 0;
    tallyJsonText(json, tally);
  }
  return tally.cjk + Math.ceil(tally.bytes / 4);
}
