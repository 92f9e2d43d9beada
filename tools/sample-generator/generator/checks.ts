// biome-ignore-all lint/suspicious/noTemplateCurlyInString: this file writes TypeScript source of the fictional repository as strings
// `npm run lint` (eslint, stylish output) and `npx tsc --noEmit` for the fictional repository, derived from the
// files' content: the planted issues are reported while their text is still there.

import type { VirtualRepo } from './repo.js';
import { REPORTS } from './repoFiles.js';

interface Problem {
  path: string;
  line: number;
  col: number;
  severity: 'error' | 'warning';
  message: string;
  rule: string;
}

function find(repo: VirtualRepo, path: string, needle: string): { line: number; col: number } | null {
  const lines = repo.read(path).split('\n');
  for (let i = 0; i < lines.length; i++) {
    const col = (lines[i] ?? '').indexOf(needle);
    if (col >= 0) return { line: i + 1, col: col + 1 };
  }
  return null;
}

export function lintProblems(repo: VirtualRepo): Problem[] {
  const problems: Problem[] = [];
  for (const spec of REPORTS) {
    const path = `src/reports/${spec.name}.ts`;
    const unused = find(repo, path, "import { Money } from '../money.js';");
    if (unused) {
      problems.push({
        path,
        line: unused.line,
        col: 10,
        severity: 'error',
        message: "'Money' is defined but never used",
        rule: '@typescript-eslint/no-unused-vars',
      });
    }
    const any = find(repo, path, 'record: any');
    if (any) {
      problems.push({
        path,
        line: any.line,
        col: any.col + 8,
        severity: 'warning',
        message: 'Unexpected any. Specify a different type',
        rule: '@typescript-eslint/no-explicit-any',
      });
    }
    const let_ = find(repo, path, '  let rows:');
    if (let_) {
      problems.push({
        path,
        line: let_.line,
        col: 7,
        severity: 'error',
        message: "'rows' is never reassigned. Use 'const' instead",
        rule: 'prefer-const',
      });
    }
  }
  return problems;
}

export function lintOutput(repo: VirtualRepo): string {
  const problems = lintProblems(repo);
  const head = ['', '> ledgerline@2.3.0 lint', '> eslint . --max-warnings 0', ''];
  if (problems.length === 0) return head.join('\n');
  const out = [...head];
  const byFile = new Map<string, Problem[]>();
  for (const p of problems) byFile.set(p.path, [...(byFile.get(p.path) ?? []), p]);
  for (const [path, list] of [...byFile.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`${repo.root}/${path}`);
    for (const p of list.sort((a, b) => a.line - b.line)) {
      out.push(`  ${`${p.line}:${p.col}`.padEnd(6)} ${p.severity.padEnd(7)}  ${p.message.padEnd(50)}  ${p.rule}`);
    }
    out.push('');
  }
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  const fixable = problems.filter((p) => p.rule === 'prefer-const').length;
  out.push(`✖ ${problems.length} problems (${errors} errors, ${warnings} warnings)`);
  if (fixable) out.push(`  ${fixable} errors and 0 warnings potentially fixable with the \`--fix\` option.`);
  out.push('', '[exit code 1]');
  return out.join('\n');
}

export function tscOutput(repo: VirtualRepo): string {
  const errors: string[] = [];
  const at = (path: string, needle: string, message: string, colOffset = 0) => {
    const hit = find(repo, path, needle);
    if (hit) errors.push(`${path}(${hit.line},${hit.col + colOffset}): error ${message}`);
  };
  const calc = repo.read('src/tax/calculator.ts');
  at(
    'src/tax/calculator.ts',
    'import { getRate }',
    "TS2724: '\"./rates.js\"' has no exported member named 'getRate'. Did you mean 'rateFor'?",
    9,
  );
  at(
    'src/api/routes/invoices.ts',
    'import { getRate }',
    "TS2724: '\"../../tax/rates.js\"' has no exported member named 'getRate'. Did you mean 'rateFor'?",
    9,
  );
  at(
    'scripts/backfill-tax.ts',
    'import { getRate }',
    "TS2724: '\"../src/tax/rates.js\"' has no exported member named 'getRate'. Did you mean 'rateFor'?",
    9,
  );
  if (calc.includes('rateOf(line: LineItem, region: string, on: IsoDate)')) {
    at(
      'src/invoice/invoice.ts',
      'calculator.rateOf(line, this.region)',
      'TS2554: Expected 3 arguments, but got 2.',
      11,
    );
    at(
      'src/invoice/invoice.ts',
      'calculator.taxFor(line, this.region)',
      'TS2554: Expected 3 arguments, but got 2.',
      11,
    );
  }
  for (const spec of REPORTS) {
    at(`src/reports/${spec.name}.ts`, 'single group: ${first[0]}', "TS18048: 'first' is possibly 'undefined'.", 17);
  }
  const head = ['', '> ledgerline@2.3.0 typecheck', '> tsc --noEmit', ''];
  if (errors.length === 0) return head.join('\n');
  const files = new Map<string, number>();
  for (const e of errors) {
    const file = e.slice(0, e.indexOf('('));
    files.set(file, (files.get(file) ?? 0) + 1);
  }
  const out = [...head, ...errors, ''];
  if (files.size === 1)
    out.push(`Found ${errors.length} error${errors.length > 1 ? 's' : ''} in ${[...files.keys()][0]}`);
  else {
    out.push(`Found ${errors.length} errors in ${files.size} files.`, '', 'Errors  Files');
    for (const [file, n] of files) out.push(`${String(n).padStart(6)}  ${file}`);
  }
  out.push('', '[exit code 2]');
  return out.join('\n');
}
