// The fictional repository of the coding-agent sample: files in memory, edited by the agent as the session goes,
// with the outputs of the tools that look at them (numbered reads, grep, git diff) computed from the real content.

export class VirtualRepo {
  readonly root = '/home/dev/ledgerline';
  private readonly original: Map<string, string>;
  private readonly files: Map<string, string>;

  constructor(files: Record<string, string>) {
    this.original = new Map(Object.entries(files));
    this.files = new Map(Object.entries(files));
  }

  has(path: string): boolean {
    return this.files.has(path);
  }

  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  read(path: string): string {
    const content = this.files.get(path);
    if (content === undefined) throw new Error(`sample generator: no file ${path}`);
    return content;
  }

  /** `cat -n` style, optionally a 1-based inclusive line range. */
  numbered(path: string, from = 1, to = Number.POSITIVE_INFINITY): string {
    const lines = this.read(path).split('\n');
    if (lines.at(-1) === '') lines.pop();
    const out: string[] = [];
    for (let i = from; i <= Math.min(to, lines.length); i++) out.push(`${String(i).padStart(6)}\t${lines[i - 1]}`);
    return out.join('\n');
  }

  /** 1-based line of the first line containing `needle`. */
  lineOf(path: string, needle: string): number {
    const index = this.read(path)
      .split('\n')
      .findIndex((l) => l.includes(needle));
    if (index < 0) throw new Error(`sample generator: '${needle}' not in ${path}`);
    return index + 1;
  }

  /** Replaces one exact, unique occurrence (like the agent's edit tool) and returns the edited region, numbered. */
  edit(path: string, oldText: string, newText: string): string {
    const content = this.read(path);
    const at = content.indexOf(oldText);
    if (at < 0 || content.indexOf(oldText, at + 1) >= 0) {
      throw new Error(
        `sample generator: edit of ${path} needs exactly one occurrence of ${JSON.stringify(oldText.slice(0, 60))}`,
      );
    }
    this.files.set(path, content.slice(0, at) + newText + content.slice(at + oldText.length));
    const first = content.slice(0, at).split('\n').length;
    const last = first + newText.split('\n').length - 1;
    return this.numbered(path, Math.max(1, first - 4), last + 4);
  }

  write(path: string, content: string): void {
    this.files.set(path, content);
  }

  /** `grep -rn` over the files under the given folders. */
  grep(pattern: RegExp, under: readonly string[] = ['']): string {
    const hits: string[] = [];
    for (const path of this.paths()) {
      if (!under.some((u) => path.startsWith(u))) continue;
      this.read(path)
        .split('\n')
        .forEach((line, i) => {
          if (pattern.test(line)) hits.push(`${path}:${i + 1}:${line}`);
        });
    }
    return hits.join('\n');
  }

  changedPaths(): string[] {
    return this.paths().filter((p) => this.original.get(p) !== this.files.get(p));
  }

  /** `git diff` of the working tree against the original content (unified, 3 lines of context). */
  diff(paths: readonly string[] = this.changedPaths()): string {
    const out: string[] = [];
    for (const path of paths) {
      const before = this.original.get(path);
      const after = this.files.get(path) ?? '';
      if (before === after) continue;
      const a = before === undefined ? [] : before.split('\n');
      const b = after.split('\n');
      out.push(`diff --git a/${path} b/${path}`);
      if (before === undefined) out.push('new file mode 100644', 'index 0000000..4f2a9c1', '--- /dev/null');
      else out.push(`index ${hashOf(before)}..${hashOf(after)} 100644`, `--- a/${path}`);
      out.push(`+++ b/${path}`);
      out.push(...unifiedHunks(a, b));
    }
    return out.join('\n');
  }

  diffStat(): string {
    const rows = this.changedPaths().map((path) => {
      const a = (this.original.get(path) ?? '').split('\n');
      const b = (this.files.get(path) ?? '').split('\n');
      const ops = lineDiff(a, b);
      const plus = ops.filter((o) => o.kind === '+').length;
      const minus = ops.filter((o) => o.kind === '-').length;
      return { path, plus, minus };
    });
    const width = Math.max(...rows.map((r) => r.path.length));
    const lines = rows.map(
      (r) =>
        ` ${r.path.padEnd(width)} | ${String(r.plus + r.minus).padStart(3)} ${'+'.repeat(Math.min(r.plus, 30))}${'-'.repeat(Math.min(r.minus, 30))}`,
    );
    const plus = rows.reduce((n, r) => n + r.plus, 0);
    const minus = rows.reduce((n, r) => n + r.minus, 0);
    lines.push(` ${rows.length} files changed, ${plus} insertions(+), ${minus} deletions(-)`);
    return lines.join('\n');
  }
}

function hashOf(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0').slice(0, 7);
}

interface Op {
  kind: ' ' | '-' | '+';
  text: string;
  a: number;
  b: number;
}

/** Line diff by longest common subsequence (files here are a few hundred lines). */
function lineDiff(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const lcs: Uint16Array[] = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    const row = lcs[i] as Uint16Array;
    const below = lcs[i + 1] as Uint16Array;
    for (let j = m - 1; j >= 0; j--) {
      row[j] = a[i] === b[j] ? (below[j + 1] as number) + 1 : Math.max(below[j] as number, row[j + 1] as number);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push({ kind: ' ', text: a[i] as string, a: i, b: j });
      i++;
      j++;
    } else if (
      j < m &&
      (i >= n || ((lcs[i] as Uint16Array)[j + 1] as number) >= ((lcs[i + 1] as Uint16Array)[j] as number))
    ) {
      ops.push({ kind: '+', text: b[j] as string, a: i, b: j });
      j++;
    } else {
      ops.push({ kind: '-', text: a[i] as string, a: i, b: j });
      i++;
    }
  }
  return ops;
}

function unifiedHunks(a: readonly string[], b: readonly string[]): string[] {
  const ops = lineDiff(a, b);
  const out: string[] = [];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k]?.kind === ' ') k++;
    if (k >= ops.length) break;
    const start = Math.max(0, k - 3);
    let end = k;
    let quiet = 0;
    while (end < ops.length && quiet < 7) {
      quiet = ops[end]?.kind === ' ' ? quiet + 1 : 0;
      end++;
    }
    end = Math.min(ops.length, end - Math.max(0, quiet - 3));
    const hunk = ops.slice(start, end);
    const first = hunk[0] as Op;
    const aLen = hunk.filter((o) => o.kind !== '+').length;
    const bLen = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${first.a + 1},${aLen} +${first.b + 1},${bLen} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.text}`);
    k = end;
  }
  return out;
}
