// Search snippets (SPEC §14.7) and result context text (§14.8), computed in TypeScript on code points. Pure.
import { isCjkChar, type SearchTerm } from './query.js';

export const START_SEL = '>>>';
export const STOP_SEL = '<<<';
/** Latin path: at most this many words around the best match. */
export const LATIN_SNIPPET_WORDS = 40;
/** CJK path: characters kept before the match, and the minimum excerpt length. */
const CJK_BEFORE = 40;
const CJK_LENGTH = 120;

/** One code point, lower-cased when that keeps it one code point (so positions stay code point positions). */
function fold(char: string): string {
  const lower = char.toLowerCase();
  return lower.length === char.length || Array.from(lower).length === 1 ? lower : char;
}

function indexOfFolded(haystack: readonly string[], needle: readonly string[]): number {
  if (needle.length === 0 || needle.length > haystack.length) return -1;
  const first = needle[0];
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    if (haystack[i] !== first) continue;
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** A high surrogate followed by a low one: one code point of two UTF-16 units (as `Array.from` splits). */
function pairAt(text: string, i: number): boolean {
  const high = text.charCodeAt(i);
  const low = text.charCodeAt(i + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

/** The UTF-16 offset `count` code points after `from` (or the end of the text). */
function codePointsAfter(text: string, from: number, count: number): number {
  let at = from;
  for (let n = 0; n < count && at < text.length; n++) at += pairAt(text, at) ? 2 : 1;
  return at;
}

/** The UTF-16 offset `count` code points before `from` (or 0). */
function codePointsBefore(text: string, from: number, count: number): number {
  let at = from;
  for (let n = 0; n < count && at > 0; n++) at -= at >= 2 && pairAt(text, at - 2) ? 2 : 1;
  return at;
}

/**
 * A term made only of CJK characters (SPEC §14.4): they have no case and no other character lower-cases to one of
 * them, so its case-insensitive occurrences are its plain occurrences, found with indexOf on the UTF-16 text.
 */
function isUncasedCjk(text: string): boolean {
  if (text.length === 0) return false;
  for (const char of text) if (!isCjkChar(char)) return false;
  return true;
}

/** The CJK excerpt around the occurrence at UTF-16 offsets [at, end), cut on code points. */
function cjkExcerpt(text: string, at: number, end: number): string {
  const start = codePointsBefore(text, at, CJK_BEFORE);
  const stop = Math.max(codePointsAfter(text, start, CJK_LENGTH), end);
  return (
    (start > 0 ? '...' : '') +
    text.slice(start, at) +
    START_SEL +
    text.slice(at, end) +
    STOP_SEL +
    text.slice(end, stop) +
    (stop < text.length ? '...' : '')
  );
}

/**
 * CJK path: the first case-insensitive occurrence of the first positive term (in query order) that occurs, with
 * 40 characters before and at least 120 in all; without an occurrence, the first 120 characters. Positions are code
 * points; a term of CJK characters only (the common one) is found without folding the text.
 */
export function cjkSnippet(text: string, positiveTerms: readonly SearchTerm[]): string {
  let chars: string[] | undefined;
  let folded: string[] | undefined;
  for (const term of positiveTerms) {
    if (isUncasedCjk(term.text)) {
      const at = text.indexOf(term.text);
      if (at !== -1) return cjkExcerpt(text, at, at + term.text.length);
      continue;
    }
    chars ??= Array.from(text);
    folded ??= chars.map(fold);
    const needle = Array.from(term.text).map(fold);
    const pos = indexOfFolded(folded, needle);
    if (pos === -1) continue;
    const at = chars.slice(0, pos).join('').length;
    return cjkExcerpt(text, at, at + chars.slice(pos, pos + needle.length).join('').length);
  }
  const stop = codePointsAfter(text, 0, CJK_LENGTH);
  return stop < text.length ? `${text.slice(0, stop)}...` : text;
}

/** Words as the Latin index splits them: runs of letters and digits. */
const WORD = /[\p{L}\p{N}]+/gu;

interface Word {
  start: number;
  end: number;
  /** Index of the query word it matches, or -1. */
  match: number;
}

interface QueryWord {
  text: string;
  prefix: boolean;
}

/** The query words of the positive terms (lower case); a prefix term's last word matches as a prefix. */
function queryWords(positiveTerms: readonly SearchTerm[]): QueryWord[] {
  const words: QueryWord[] = [];
  for (const term of positiveTerms) {
    const parts = term.text.toLowerCase().match(WORD) ?? [];
    parts.forEach((text, i) => {
      words.push({ text, prefix: term.prefix && i === parts.length - 1 });
    });
  }
  return words;
}

function matchIndex(word: string, query: readonly QueryWord[]): number {
  const lower = word.toLowerCase();
  for (let i = 0; i < query.length; i++) {
    const q = query[i] as QueryWord;
    if (q.prefix ? lower.startsWith(q.text) : lower === q.text) return i;
  }
  return -1;
}

/** The first word of the 40-word window holding the most distinct query words (then the most matches). */
function bestWindowStart(words: readonly Word[]): number {
  const matches: number[] = [];
  for (let i = 0; i < words.length && matches.length < 2000; i++) if ((words[i] as Word).match >= 0) matches.push(i);
  const first = matches[0];
  if (first === undefined) return 0;
  let best = { start: first, last: first, distinct: 0, count: 0 };
  for (let a = 0; a < matches.length; a++) {
    const start = matches[a] as number;
    const seen = new Set<number>();
    let last = start;
    let count = 0;
    for (let b = a; b < matches.length && (matches[b] as number) < start + LATIN_SNIPPET_WORDS; b++) {
      last = matches[b] as number;
      seen.add((words[last] as Word).match);
      count++;
    }
    if (seen.size > best.distinct || (seen.size === best.distinct && count > best.count)) {
      best = { start, last, distinct: seen.size, count };
    }
  }
  // Centre the matches in the window.
  const slack = LATIN_SNIPPET_WORDS - (best.last - best.start + 1);
  const start = Math.max(0, best.start - Math.floor(slack / 2));
  const end = Math.min(words.length, start + LATIN_SNIPPET_WORDS);
  return Math.max(0, end - LATIN_SNIPPET_WORDS);
}

/**
 * Latin path: at most 40 words around the best match, every matched word wrapped in `>>>…<<<` (original casing),
 * `...` before / after when the excerpt does not reach the start / end of the text.
 */
export function latinSnippet(text: string, positiveTerms: readonly SearchTerm[]): string {
  const query = queryWords(positiveTerms);
  const words: Word[] = [];
  for (const m of text.matchAll(WORD)) {
    const start = m.index ?? 0;
    words.push({ start, end: start + m[0].length, match: matchIndex(m[0], query) });
  }
  if (words.length === 0) return cjkSnippet(text, []);
  const first = bestWindowStart(words);
  const last = Math.min(words.length, first + LATIN_SNIPPET_WORDS) - 1;
  const from = first === 0 ? 0 : (words[first] as Word).start;
  const to = last === words.length - 1 ? text.length : (words[last] as Word).end;
  let out = from > 0 ? '...' : '';
  let cursor = from;
  for (let i = first; i <= last; i++) {
    const word = words[i] as Word;
    if (word.match < 0) continue;
    out += `${text.slice(cursor, word.start)}${START_SEL}${text.slice(word.start, word.end)}${STOP_SEL}`;
    cursor = word.end;
  }
  out += text.slice(cursor, to);
  return to < text.length ? `${out}...` : out;
}
