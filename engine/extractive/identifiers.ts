// Identifiers of a window (issue #15 §2 "critical context"): paths, URLs, inline code and commands, error codes,
// numbers with units, amounts, dates, versions and ids — ranked by how often they occur, then by first appearance,
// and deduplicated. The quality gate of LLM summaries checks the same list (activities/compaction/summaryGate.ts).

const PATTERNS: readonly RegExp[] = [
  /\bhttps?:\/\/[^\s<>"'`)\]]+[^\s<>"'`)\].,;:!?]/g,
  /`([^`\n]{1,200})`/g,
  /(?:~|\.{1,2})?\/?(?:[\w.@-]+\/)+[\w.@-]*[\w@-]/g,
  /\b[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|json|py|md|ya?ml|toml|go|rs|java|kt|c|h|cc|cpp|sql|sh|txt|css|scss|html|lock|cfg|ini|env|xml|csv|log)\b/g,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
  /\b(?:HTTP|status)\s?[1-5]\d\d\b/gi,
  /\bE[A-Z]{3,}\b/g,
  /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g,
  /\b[A-Z]{1,5}-?\d{2,6}\b/g,
  /\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g,
  /(?<![\w-])--[a-z][\w-]+/g,
  /\bv?\d+\.\d+(?:\.\d+)+(?:-[\w.]+)?\b|\bv\d+(?:\.\d+)?\b/g,
  /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b/g,
  /[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|K|M|bn))?/g,
  /\b\d+(?:[.,]\d+)?\s?(?:ms|µs|ns|s|sec|seconds?|minutes?|min|hours?|h|days?|KB|MB|GB|TB|KiB|MiB|GiB|kB|px|tokens|req\/s|rps|qps|%|x)(?![\w])/g,
  /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/g,
];

/** Identifiers in one text, in order of appearance (a match inside inline code counts once, as the code). */
export function identifiersIn(text: string): string[] {
  const found: { at: number; end: number; value: string }[] = [];
  for (const pattern of PATTERNS) {
    for (const match of text.matchAll(pattern)) {
      const value = (match[1] ?? match[0]).trim();
      if (value.length < 2 || value.length > 200) continue;
      const at = match.index ?? 0;
      found.push({ at, end: at + match[0].length, value });
    }
  }
  found.sort((a, b) => a.at - b.at || b.end - a.end);
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

/** Counts identifiers over texts; `rank` lists them by count (desc), then first appearance, without substrings. */
export class IdentifierRanking {
  private readonly counts = new Map<string, { count: number; first: number }>();
  private next = 0;

  add(text: string, weight = 1): void {
    for (const value of identifiersIn(text)) this.addValue(value, weight);
  }

  addValue(value: string, weight = 1): void {
    const entry = this.counts.get(value);
    if (entry) entry.count += weight;
    else this.counts.set(value, { count: weight, first: this.next++ });
  }

  rank(): string[] {
    const ordered = [...this.counts.entries()]
      .sort((a, b) => b[1].count - a[1].count || a[1].first - b[1].first)
      .map(([value]) => value);
    // An identifier that is a part of a longer one (a file name inside its path, a word of a command) adds nothing.
    const parts = new Set<string>();
    for (const value of ordered) {
      const pieces = value.split(/[\s/]+/);
      if (pieces.length > 1) for (const piece of pieces) if (piece !== value) parts.add(piece);
    }
    return ordered.filter((value) => !parts.has(value));
  }
}
