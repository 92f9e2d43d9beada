// Identifiers of a window (issue #15 §2 "critical context"): paths, URLs, inline code and commands, error codes,
// numbers with units, amounts, dates, versions and ids — ranked by how often they occur, then by first appearance,
// and deduplicated. The quality gate of LLM summaries checks the same list (activities/compaction/summaryGate.ts).

/** A text the patterns are run on, with the cheap facts that let a pattern that cannot match be skipped. */
interface Scanned {
  text: string;
  digit: boolean;
}

/** `accept`: a further condition on a match, checked in code where a regular expression would be slow. */
interface Pattern {
  regex: RegExp;
  can: (s: Scanned) => boolean;
  accept?: (match: string) => boolean;
}

const has =
  (needle: string) =>
  (s: Scanned): boolean =>
    s.text.includes(needle);
const digit = (s: Scanned): boolean => s.digit;
const digitAndDash = (s: Scanned): boolean => s.digit && s.text.includes('-');

// Each pattern once, with what a text must contain for it to match (issue #15 §2: ≤ 5 ms for 1,000 messages).
const PATTERNS: readonly Pattern[] = [
  { regex: /\bhttps?:\/\/[^\s<>"'`)\]]+[^\s<>"'`)\].,;:!?]/g, can: has('://') },
  { regex: /`([^`\n]{1,200})`/g, can: has('`') },
  { regex: /(?<![\w.@~-])(?:~|\.{1,2})?\/?(?:[\w.@-]+\/)+[\w.@-]*[\w@-]/g, can: has('/') },
  {
    regex:
      /\b[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|json|py|md|ya?ml|toml|go|rs|java|kt|c|h|cc|cpp|sql|sh|txt|css|scss|html|lock|cfg|ini|env|xml|csv|log)\b/g,
    can: has('.'),
  },
  { regex: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, can: digitAndDash },
  { regex: /\b(?:HTTP|status)\s?[1-5]\d\d\b/gi, can: digit },
  { regex: /\bE[A-Z]{3,}\b/g, can: has('E') },
  { regex: /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g, can: has('_') },
  { regex: /\b[A-Z]{1,5}-?\d{2,6}\b/g, can: digit },
  { regex: /\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g, can: has('_') },
  { regex: /(?<![\w-])--[a-z][\w-]+/g, can: has('--') },
  { regex: /\bv?\d+\.\d+(?:\.\d+)+(?:-[\w.]+)?\b|\bv\d+(?:\.\d+)?\b/g, can: digit },
  { regex: /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b/g, can: digitAndDash },
  { regex: /[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|K|M|bn))?/g, can: (s) => s.digit && /[$€£¥]/.test(s.text) },
  {
    regex:
      /\b\d+(?:[.,]\d+)?\s?(?:ms|µs|ns|s|sec|seconds?|minutes?|min|hours?|h|days?|KB|MB|GB|TB|KiB|MiB|GiB|kB|px|tokens|req\/s|rps|qps|%|x)(?![\w])/g,
    can: digit,
  },
  // A hex id (commit, hash) of 7–40 characters with a digit and a letter: the run is the whole match (\b on both
  // sides), so testing the match is testing the run (lookaheads at every word cost more).
  { regex: /\b[0-9a-f]{7,40}\b/g, can: digit, accept: (m) => /\d/.test(m) && /[a-f]/.test(m) },
];

interface Found {
  at: number;
  end: number;
  value: string;
}

/** Every match of every pattern that can match, or only the first one (`first`). */
function scan(text: string, first: boolean): Found[] {
  const scanned: Scanned = { text, digit: /\d/.test(text) };
  const found: Found[] = [];
  for (const { regex, can, accept } of PATTERNS) {
    if (!can(scanned)) continue;
    // exec on the shared global regex (matchAll would clone it on every call).
    regex.lastIndex = 0;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      if (match[0].length === 0) regex.lastIndex++;
      if (accept && !accept(match[0])) continue;
      const value = (match[1] ?? match[0]).trim();
      if (value.length < 2 || value.length > 200) continue;
      found.push({ at: match.index, end: match.index + match[0].length, value });
      if (first) return found;
    }
  }
  return found;
}

/** Whether a text holds at least one identifier (`identifiersIn(text).length > 0`, without listing them). */
export function hasIdentifier(text: string): boolean {
  return scan(text, true).length > 0;
}

const byStartThenLongest = (a: Found, b: Found): number => a.at - b.at || b.end - a.end;

/** Identifiers in one text, in order of appearance (a match inside inline code counts once, as the code). */
export function identifiersIn(text: string): string[] {
  const found = scan(text, false);
  found.sort(byStartThenLongest);
  const out: string[] = [];
  const seen = new Set<string>();
  let coveredUntil = -1;
  for (const { end, value } of found) {
    // A match inside a longer one (`module_0` in `src/module_0.ts`, a version inside a URL) is part of it.
    if (end <= coveredUntil) continue;
    coveredUntil = Math.max(coveredUntil, end);
    if (seen.has(value)) continue;
    seen.add(value);
    out.push(value);
  }
  return out;
}

const SEPARATOR = /[\s/]/;

/**
 * Counts identifiers over texts; `rank` lists them by count (desc), then first appearance, without substrings. The
 * texts are scanned when the ranking is asked for, in the order they were added: a summary whose budget keeps no
 * identifier never scans them (budget.ts).
 */
export class IdentifierRanking {
  private readonly counts = new Map<string, { count: number; first: number }>();
  private next = 0;
  private readonly pending: { text: string; weight: number; whole: boolean }[] = [];

  add(text: string, weight = 1): void {
    this.pending.push({ text, weight, whole: false });
  }

  addValue(value: string, weight = 1): void {
    this.pending.push({ text: value, weight, whole: true });
  }

  private count(value: string, weight: number): void {
    const entry = this.counts.get(value);
    if (entry) entry.count += weight;
    else this.counts.set(value, { count: weight, first: this.next++ });
  }

  rank(): string[] {
    for (const { text, weight, whole } of this.pending) {
      if (whole) this.count(text, weight);
      else for (const value of identifiersIn(text)) this.count(value, weight);
    }
    this.pending.length = 0;
    const ordered = [...this.counts.entries()]
      .sort((a, b) => b[1].count - a[1].count || a[1].first - b[1].first)
      .map(([value]) => value);
    // An identifier that is a part of a longer one (a file name inside its path, a word of a command) adds nothing.
    const parts = new Set<string>();
    for (const value of ordered) {
      if (!SEPARATOR.test(value)) continue;
      const pieces = value.split(/[\s/]+/);
      if (pieces.length > 1) for (const piece of pieces) if (piece !== value) parts.add(piece);
    }
    return ordered.filter((value) => !parts.has(value));
  }
}
