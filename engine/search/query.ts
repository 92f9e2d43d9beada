// Search query sanitising, parsing (SPEC §14.3) and routing (SPEC §14.4). Pure: no I/O.
//
// The result is an OR of AND-groups; every group starts with a positive term and may hold negated terms
// (`a NOT b` = a AND NOT b). Precedence NOT > AND > OR, so `a b NOT c OR d` = (a AND b AND NOT c) OR d.

/** SPEC §14.3 step 1: the query is cut to this many characters (code points). */
export const MAX_QUERY_CHARS = 2048;

export interface SearchTerm {
  /** The term's text: a word, a quoted phrase (whitespace collapsed) or a compound term as written. */
  text: string;
  /** Quoted phrases and compound terms (`my-app.config.ts`): matched as a phrase on the Latin path. */
  phrase: boolean;
  /** Written with a trailing `*`: prefix match of its (last) word on the Latin path; ignored on the CJK path. */
  prefix: boolean;
}

export interface QueryClause {
  term: SearchTerm;
  negated: boolean;
}

export type SearchPath = 'latin' | 'cjk';

export interface ParsedQuery {
  path: SearchPath;
  /** OR of AND-groups. Never empty; each group's first clause is positive. */
  groups: QueryClause[][];
}

/** SPEC §14.4 ranges, inclusive. */
const CJK_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x4e00, 0x9fff],
  [0x3400, 0x4dbf],
  [0x20000, 0x2a6df],
  [0x3000, 0x303f],
  [0x3040, 0x309f],
  [0x30a0, 0x30ff],
  [0xac00, 0xd7af],
];

export function isCjkCodePoint(codePoint: number): boolean {
  for (const [low, high] of CJK_RANGES) if (codePoint >= low && codePoint <= high) return true;
  return false;
}

export function isCjkChar(char: string | undefined): boolean {
  if (char === undefined) return false;
  const cp = char.codePointAt(0);
  return cp !== undefined && isCjkCodePoint(cp);
}

/** SPEC §14.4: any character in the CJK ranges routes the query to the CJK path. */
export function containsCjk(text: string): boolean {
  for (const char of text) if (isCjkChar(char)) return true;
  return false;
}

export function routeQuery(text: string): SearchPath {
  return containsCjk(text) ? 'cjk' : 'latin';
}

/** Step 3: these become spaces (inside and outside phrases). */
const SPECIAL: ReadonlySet<string> = new Set(Array.from("+{}()[]<>:^@/#&|~,;!?$='`\\"));

const OPERATORS = new Set(['AND', 'OR', 'NOT']);
const COMPOUND_EDGES = /^[.\-_]+|[.\-_]+$/g;
const COMPOUND_CHARS = /[.\-_]/;

/** Step 3 over the code points of the (cut) query; `"` is kept for the phrase scan. */
function replaceSpecials(chars: readonly string[]): string[] {
  return chars.map((char, i) => {
    if (SPECIAL.has(char)) return ' ';
    if (char === '%' && !isCjkChar(chars[i - 1]) && !isCjkChar(chars[i + 1])) return ' ';
    return char;
  });
}

type Token = { kind: 'term'; term: SearchTerm } | { kind: 'op'; op: 'AND' | 'OR' | 'NOT' };

/** Step 5 for a word: collapse star runs, drop stars that are not last; a trailing star marks a prefix term. */
function applyStars(word: string): { text: string; prefix: boolean } {
  const collapsed = word.replace(/\*+/g, '*').replace(/\*(?!$)/g, '');
  return collapsed.endsWith('*') ? { text: collapsed.slice(0, -1), prefix: true } : { text: collapsed, prefix: false };
}

function wordToken(word: string): Token | undefined {
  const { text, prefix } = applyStars(word);
  if (text === '') return undefined;
  if (!prefix && OPERATORS.has(text)) return { kind: 'op', op: text as 'AND' | 'OR' | 'NOT' };
  // Step 7: compound terms.
  const stripped = text.replace(COMPOUND_EDGES, '');
  if (stripped === '') return undefined;
  return { kind: 'term', term: { text: stripped, phrase: COMPOUND_CHARS.test(stripped), prefix } };
}

function phraseToken(raw: string): Token | undefined {
  const collapsed = raw.replace(/\s+/g, ' ').trim();
  const { text, prefix } = applyStars(collapsed);
  const cleaned = text.replace(/\s+/g, ' ').trim();
  if (cleaned === '') return undefined;
  return { kind: 'term', term: { text: cleaned, phrase: true, prefix } };
}

/** Steps 2–5 and 7: the tokens of the query, in order. */
function tokenize(query: string): Token[] {
  const chars = replaceSpecials(Array.from(query));
  const tokens: Token[] = [];
  const pushWords = (segment: string) => {
    for (const word of segment.split(/\s+/)) {
      if (word === '') continue;
      const token = wordToken(word);
      if (token) tokens.push(token);
    }
  };
  let outside = '';
  let i = 0;
  while (i < chars.length) {
    const char = chars[i] as string;
    if (char !== '"') {
      outside += char;
      i++;
      continue;
    }
    const close = chars.indexOf('"', i + 1);
    if (close === -1) {
      // An unmatched quote is removed.
      outside += ' ';
      i++;
      continue;
    }
    pushWords(outside);
    outside = '';
    const token = phraseToken(chars.slice(i + 1, close).join(''));
    if (token) tokens.push(token);
    i = close + 1;
  }
  pushWords(outside);
  return tokens;
}

/** Step 6: drop operators at the ends (repeatedly); of consecutive operators keep the last. */
function normaliseOperators(tokens: readonly Token[]): Token[] {
  const out: Token[] = [];
  for (const token of tokens) {
    const last = out[out.length - 1];
    if (token.kind === 'op') {
      if (!last) continue;
      if (last.kind === 'op') out[out.length - 1] = token;
      else out.push(token);
    } else {
      out.push(token);
    }
  }
  while (out.length > 0 && out[out.length - 1]?.kind === 'op') out.pop();
  return out;
}

function toGroups(tokens: readonly Token[]): QueryClause[][] {
  const groups: QueryClause[][] = [[]];
  let negateNext = false;
  for (const token of tokens) {
    if (token.kind === 'op') {
      if (token.op === 'OR') groups.push([]);
      negateNext = token.op === 'NOT';
      continue;
    }
    (groups[groups.length - 1] as QueryClause[]).push({ term: token.term, negated: negateNext });
    negateNext = false;
  }
  return groups.filter((group) => group.length > 0);
}

/** The first MAX_QUERY_CHARS code points. */
export function cutQuery(query: string): string {
  if (query.length <= MAX_QUERY_CHARS) return query;
  return Array.from(query).slice(0, MAX_QUERY_CHARS).join('');
}

/**
 * SPEC §14.3 + §14.4: the parsed query, or null when nothing can be searched (non-string, blank, no terms).
 * Never throws.
 */
export function parseSearchQuery(query: unknown): ParsedQuery | null {
  if (typeof query !== 'string' || query.trim() === '') return null;
  const cut = cutQuery(query);
  const groups = toGroups(normaliseOperators(tokenize(cut)));
  if (groups.length === 0) return null;
  return { path: routeQuery(cut), groups };
}

/** The positive terms in query order (snippets use the first one that occurs). */
export function positiveTerms(parsed: ParsedQuery): SearchTerm[] {
  return parsed.groups.flatMap((group) => group.filter((c) => !c.negated).map((c) => c.term));
}

/** Escapes `\`, `%` and `_` for `LIKE … ESCAPE '\'`. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * The CJK grams a row must contain when it contains `text` (the prefilter of the 1–2-character CJK path):
 * each maximal run of CJK characters gives its bigrams, a run of one character gives that unigram. Mirrors the
 * SQL function `dc_cjk_grams` (migrations/0002), which stores every unigram and bigram of each run.
 */
export function cjkGramsOf(text: string): string[] {
  const grams = new Set<string>();
  let run: string[] = [];
  const flush = () => {
    if (run.length === 1) grams.add(run[0] as string);
    for (let i = 0; i + 1 < run.length; i++) grams.add(`${run[i]}${run[i + 1]}`);
    run = [];
  };
  for (const char of text) {
    if (isCjkChar(char)) run.push(char);
    else flush();
  }
  flush();
  return [...grams];
}
