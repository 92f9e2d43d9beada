// biome-ignore-all lint/suspicious/noTemplateCurlyInString: this file writes TypeScript source of the fictional repository as strings
// Texts of the English coding-agent sample, second half: the follow-ups after the suite is green.
import type { Rng } from './random.js';
import type { VirtualRepo } from './repo.js';
import type { ReportSpec } from './repoFiles.js';

export const REGRESSION_REQUEST =
  'Can you add regression tests for the rounding bug from the original report (#431)? The customer had a line of 1.005 EUR that was printed as 1.01 on one receipt and 1.00 on the PDF, and a JPY refund of -2.5 that came out as -3.';

export const REGRESSION_ANCHOR = "      expect(Money.of(1500, 'JPY').toString()).toBe('1500 JPY');\n    });\n  });\n";

export const REGRESSION_TESTS = `      expect(Money.of(1500, 'JPY').toString()).toBe('1500 JPY');
    });
  });

  describe('regressions', () => {
    // #431: 1.005 EUR was printed as 1.01 on the receipt and 1.00 on the PDF
    it('rounds 1.005 EUR to 1.00 everywhere (half to even, despite 1.00499... in binary)', () => {
      const m = Money.of(1.005, 'EUR');
      expect(m.round().amount).toBe(1);
      expect(m.toString()).toBe('1.00 EUR');
      expect(m.toJSON()).toEqual({ amount: '1.00', currency: 'EUR' });
    });

    // #431: a JPY refund of -2.5 came out as -3
    it('rounds a -2.5 JPY refund to -2', () => {
      expect(Money.of(-2.5, 'JPY').round().amount).toBe(-2);
      expect(Money.of(-2.5, 'JPY').toString()).toBe('-2 JPY');
    });

    it('keeps sums of rounded lines stable', () => {
      const lines = [1.005, 2.675, 0.125].map((v) => Money.of(v, 'EUR').round());
      expect(sum(lines, 'EUR').round().amount).toBe(3.8);
    });
  });
`;

export function regressionAgainstOldCode(clock: string): string {
  return `Saved working directory and index state WIP on main: 4d0c1f9 Merge branch 'tax-refactor'

 RUN  v1.6.0 /home/dev/ledgerline

 ❯ test/money.test.ts  (16 tests | 1 failed | 13 skipped) 8ms
   ❯ test/money.test.ts > Money > regressions > rounds a -2.5 JPY refund to -2
     → expected -3 to be -2 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  test/money.test.ts > Money > regressions > rounds a -2.5 JPY refund to -2
AssertionError: expected -3 to be -2 // Object.is equality

- Expected
+ Received

- -2
+ -3

 ❯ test/money.test.ts:91:47
     89|     // #431: a JPY refund of -2.5 came out as -3
     90|     it('rounds a -2.5 JPY refund to -2', () => {
     91|       expect(Money.of(-2.5, 'JPY').round().amount).toBe(-2);
       |                                               ^
     92|       expect(Money.of(-2.5, 'JPY').toString()).toBe('-2 JPY');
     93|     });

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯

 Test Files  1 failed (1)
      Tests  1 failed | 2 passed | 13 skipped (16)
   Start at  ${clock}
   Duration  702ms (transform 88ms, setup 0ms, collect 102ms, tests 8ms, environment 0ms, prepare 91ms)

On branch main
Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
	modified:   src/api/routes/invoices.ts
	modified:   src/dates.ts
	modified:   src/invoice/invoice.ts
	modified:   src/money.ts
	modified:   test/money.test.ts
Dropped refs/stash@{0} (5e1c9d0a7b3f2e8d4c6a1b0f9e8d7c6b5a4f3e2d)`;
}

export const REGRESSION_DONE = `Added three regression tests under \`Money > regressions\`, referencing #431:

- \`1.005 EUR\` rounds to \`1.00\` in \`round()\`, \`toString()\` and \`toJSON()\` — the receipt and the PDF used different paths, and now all go through the same \`round()\`;
- a \`-2.5 JPY\` refund rounds to \`-2\` (half to even; the old \`toFixed\` gave \`-3\`);
- a sum of rounded lines stays stable.

Against the old \`src/money.ts\` (stashed for one run) the JPY test fails with \`-3\`, so it does catch the bug. The 1.005 test passes even on the old code — \`toFixed\` gives \`1.00\` by accident of the binary value — but it pins the behaviour across \`round()\`, \`toString()\` and \`toJSON()\`, which is where the receipt and the PDF differed.`;

export function node18Request(): string {
  return `CI update: the Node 18 jobs fail now, everything else is green. Log:

\`\`\`
 ❯ test/reports/agingReport.test.ts  (3 tests | 3 failed) 7ms
   ❯ test/reports/agingReport.test.ts > agingReport > groups the invoices
     → rows.toSorted is not a function
 ❯ test/reports/overdueList.test.ts  (3 tests | 3 failed) 6ms
 ❯ test/reports/revenueByMonth.test.ts  (3 tests | 3 failed) 6ms
 ❯ test/reports/cashFlowForecast.test.ts  (3 tests | 3 failed) 8ms
 Test Files  4 failed | 12 passed (16)
      Tests  12 failed | 68 passed (80)
\`\`\`

We promised Node 18 support until the end of the year, so please don't drop it.`;
}

export const DOCKER_RUN = [
  'I have Node 20 locally; Docker can run the suite on Node 18 to reproduce.',
  "Reproducing with the official Node 18 image, since I'm on Node 20.",
];

export const NODE18_GUARD = [
  'Reproduced and fixed: `Array.prototype.toSorted` is Node 20+ (ES2023). Since `tsconfig` targets ES2022 with `lib: ["ES2022"]`, how did this typecheck at all? Let me look at the package setup.',
];

export const NODE18_SUMMARY = `Node 18 passes again. \`toSorted\` (ES2023, Node 20+) was used in four report modules; I replaced it with \`[...rows].sort(...)\`, which is what \`toSorted\` does and works on Node 18.

It type-checked because \`@types/node@20\` declares the ES2023 array methods regardless of \`lib\`. To stop this from coming back I'd suggest pinning \`@types/node\` to \`^18\` while Node 18 is supported — want me to do that? I also tightened \`engines\` so npm warns on Node 19, which was never tested.`;

export const PERF_REQUEST =
  'Perfect. Unrelated but while you are in there: the API is slow for big invoices, p95 is around 2 s for invoices with ~5k lines. Can you check whether `totals()` is the problem? There is a bench script.';

export function benchBefore(rng: Rng): string {
  const j = () => 1 + (rng.next() - 0.5) * 0.1;
  return `
> ledgerline@2.3.0 bench
> tsx bench/totals.bench.ts

lines     runs   mean ms    p95 ms
10        200        ${(0.031 * j()).toFixed(3)}     ${(0.058 * j()).toFixed(3)}
100       200        ${(1.104 * j()).toFixed(3)}     ${(1.732 * j()).toFixed(3)}
1000      20        ${(96.31 * j()).toFixed(3)}   ${(112.9 * j()).toFixed(3)}
5000      20      ${(2287.4 * j()).toFixed(3)}  ${(2551.8 * j()).toFixed(3)}`;
}

export function benchAfter(rng: Rng): string {
  const j = () => 1 + (rng.next() - 0.5) * 0.1;
  return `
> ledgerline@2.3.0 bench
> tsx bench/totals.bench.ts

lines     runs   mean ms    p95 ms
10        200        ${(0.012 * j()).toFixed(3)}     ${(0.024 * j()).toFixed(3)}
100       200        ${(0.081 * j()).toFixed(3)}     ${(0.133 * j()).toFixed(3)}
1000      20         ${(0.742 * j()).toFixed(3)}     ${(0.911 * j()).toFixed(3)}
5000      20         ${(3.906 * j()).toFixed(3)}     ${(4.875 * j()).toFixed(3)}`;
}

export const PERF_EXPLANATION = `Yes — \`totals()\` is quadratic. For every line it recomputes the "running net" by filtering **all** lines up to that position and summing them again:

\`\`\`ts
net = sum(this.lines.filter((l) => l.position <= line.position).map((l) => l.net()), this.currency);
\`\`\`

For 5,000 lines that is ~12.5 million \`net()\` calls, each allocating \`Money\` objects — the bench shows ~2.3 s, which matches your p95. Only the final value of \`net\` is ever used, so a running sum gives the same result in linear time.`;

export const PERF_SUMMARY =
  '`totals()` is now linear: 5,000 lines take ~4 ms instead of ~2.3 s (about 580× faster), and 1,000 lines ~0.7 ms. The invoice, receipt and API tests still pass, so the totals are unchanged. If the API is still slow after this, the next suspect would be that `GET /invoices/:id` recomputes totals that are already stored on the record.';

export const DIFF_REQUEST = 'Great. Can you show me the full diff and write a PR description for all of this?';

export const PR_DESCRIPTION = `## Repair the test suite after the tax refactor (#412), plus CI fixes

### Why
After merging \`tax-refactor\`, \`npm test\` and CI failed for five unrelated reasons that masked each other.

### What changed
**Tax (#412 follow-up)**
- \`TaxCalculator.rateOf/taxFor\` take the supply date and use \`rateFor(region, category, on)\`; \`getRate\` no longer exists.
- \`Invoice.totals()\` passes the invoice's \`issuedAt\` as the supply date.
- \`POST /tax/preview\` accepts an optional \`on\` (defaults to today via the injected clock).
- \`scripts/backfill-tax.ts\` uses each record's issue date.

**Money**
- \`Money.round()\` is half-to-even again (regressed in e93a7c5 by \`toFixed\`, which rounds half up on the binary value). Ties are detected with a tolerance; negative amounts use \`floor\`.
- Regression tests for #431 (1.005 EUR, −2.5 JPY).

**Invoices**
- \`finalize()\` awaits \`repo.save()\` before changing the status (was an unhandled rejection and a race).
- \`totals()\` is linear instead of quadratic (5k lines: 2.3 s → 4 ms).

**Dates**
- \`addDays\` / \`isWeekend\` use UTC accessors: ISO dates are parsed as UTC midnight, so local-time arithmetic broke west of UTC and across DST (CI's Los Angeles jobs).

**Tests & tooling**
- Receipt snapshots updated for the intentional label change in #398.
- The overdue API test pins the clock (it only passed on 2024-06-14).
- Lint: unused imports, \`any\`, \`prefer-const\` in the report modules; typecheck: unchecked index access in three formatters.
- Node 18: \`toSorted\` replaced in four report modules.

### Not changed
- The public API in \`src/index.ts\`.

### How to verify
\`\`\`
npm run lint && npm run typecheck && npm test
TZ=America/Los_Angeles npm test
docker run --rm -v "$PWD":/app -w /app node:18-slim npx vitest run
npm run bench
\`\`\``;

export const REBASE_REQUEST =
  'Looks good. Can you commit this and rebase on origin/main? Jonas merged something into the tax calculator this morning, there might be a conflict.';

export function commitOutput(): string {
  return `[main 3f9c2ab] fix: repair the test suite after the tax refactor
 21 files changed, 214 insertions(+), 96 deletions(-)
3f9c2ab fix: repair the test suite after the tax refactor
4d0c1f9 Merge branch 'tax-refactor'
8c41d2e refactor(tax): rates depend on the supply date; rename getRate -> rateFor (#412)`;
}

export const PERCENT_TS = `/** Formats a rate (0.055) as a percentage ("5.5%") without trailing zeros, in the receipt's locale. */
export function formatPercent(rate: number, locale = 'en-US'): string {
  return new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 2 }).format(rate);
}
`;

export const CONFLICT_BLOCK = `<<<<<<< HEAD
import { formatPercent } from '../format/percent.js';
import type { LineItem } from '../invoice/lineItem.js';
import type { Money } from '../money.js';
import { getRate } from './rates.js';
=======
import type { IsoDate } from '../dates.js';
import type { LineItem } from '../invoice/lineItem.js';
import type { Money } from '../money.js';
import { rateFor } from './rates.js';
>>>>>>> 3f9c2ab (fix: repair the test suite after the tax refactor)`;

export const CONFLICT_RESOLVED = `import type { IsoDate } from '../dates.js';
import { formatPercent } from '../format/percent.js';
import type { LineItem } from '../invoice/lineItem.js';
import type { Money } from '../money.js';
import { rateFor } from './rates.js';`;

/** Puts the repository in the state of `git rebase origin/main` stopped on the calculator conflict. */
export function startRebase(repo: VirtualRepo): string {
  const path = 'src/tax/calculator.ts';
  const current = repo.read(path);
  const imports = `import type { IsoDate } from '../dates.js';
import type { LineItem } from '../invoice/lineItem.js';
import type { Money } from '../money.js';
import { rateFor } from './rates.js';`;
  repo.write(
    path,
    current
      .replace(imports, CONFLICT_BLOCK)
      .replace('    return `VAT ${Number((rate * 100).toFixed(2))}%`;', '    return `VAT ${formatPercent(rate)}`;'),
  );
  repo.write('src/format/percent.ts', PERCENT_TS);
  return `remote: Enumerating objects: 11, done.
remote: Counting objects: 100% (11/11), done.
remote: Compressing objects: 100% (4/4), done.
remote: Total 6 (delta 3), reused 0 (delta 0), pack-reused 0
Unpacking objects: 100% (6/6), 1.02 KiB | 1.02 MiB/s, done.
From github.com:acme-finance/ledgerline
   4d0c1f9..a81d5e7  main       -> origin/main
Auto-merging src/tax/calculator.ts
CONFLICT (content): Merge conflict in src/tax/calculator.ts
error: could not apply 3f9c2ab... fix: repair the test suite after the tax refactor
hint: Resolve all conflicts manually, mark them as resolved with
hint: "git add/rm <conflicted_files>", then run "git rebase --continue".
hint: You can instead skip this commit: run "git rebase --skip".
hint: To abort and get back to the state before "git rebase", run "git rebase --abort".
Could not apply 3f9c2ab... fix: repair the test suite after the tax refactor

[exit code 1]`;
}

export const CONFLICT_EXPLANATION =
  "The conflict is only in the imports: upstream (a81d5e7) added `formatPercent` for the rate labels, and still imports `getRate`; my commit replaced `getRate` with `rateFor` and added the `IsoDate` type. The rest of upstream's change (the label now uses `formatPercent`) merged cleanly. The resolution keeps both: `formatPercent`, `IsoDate` and `rateFor`, no `getRate`.";

export const REBASE_CONTINUE = `[detached HEAD 5b2e9f1] fix: repair the test suite after the tax refactor
 22 files changed, 215 insertions(+), 96 deletions(-)
Successfully rebased and updated refs/heads/main.`;

export function logAfterRebase(): string {
  return `5b2e9f1 fix: repair the test suite after the tax refactor
a81d5e7 feat(tax): locale-aware percent labels (#440)
4d0c1f9 Merge branch 'tax-refactor'
8c41d2e refactor(tax): rates depend on the supply date; rename getRate -> rateFor (#412)
b71e0a3 feat(receipt): label tax lines "Tax (VAT x%)" (#398)
e93a7c5 refactor(money): simplify rounding`;
}

export const REBASE_DONE =
  "Rebased onto origin/main (a81d5e7). The only conflict was the import block of `src/tax/calculator.ts`; typecheck and the full suite pass on top of Jonas's change. I haven't pushed — tell me if you want me to push to a branch and open the PR with the description above.";

export const DOCS_REQUEST =
  "Don't push yet. While we're at it: the report functions show up in our generated docs site with no description at all. Can you add TSDoc comments to the exported report functions and their formatters?";

export function reportDoc(spec: ReportSpec): string {
  const fields = spec.fields.map(([f]) => `\`${f}\``).join(', ');
  const order =
    spec.sortField === 'key'
      ? `by key, ${spec.descending ? 'descending' : 'ascending'}`
      : `by \`${spec.sortField}\`, ${spec.descending ? 'largest first' : 'smallest first'}`;
  return `/**
 * ${spec.title}.
 *
 * Groups the invoices by ${spec.groupBy} and returns one row per group with ${fields}. Rows are sorted ${order}.
 * Amounts are decimal strings with two digits, summed in cents so that rounding never drifts.
 *
 * @param records stored invoices, in any order; invoices in other currencies are skipped when \`options.currency\` is set
 * @param options \`asOf\`: the day the report is made for (used for overdue and aging computations)
 */`;
}

export const DOCS_DONE =
  'Every exported report function and formatter now has a TSDoc comment: what the report is, how rows are grouped and sorted, which fields they carry, and what `asOf` means. Lint and typecheck still pass (TSDoc `@param` names match the parameters).';

export const REPORT_TESTS_REQUEST =
  "One more thing about the reports: their tests are pretty useless, `rows.length >= 0` can't fail. Could you rewrite each report test with a small fixture and the exact expected rows?";

export const REPORT_TESTS_DONE =
  'All eight report tests now use the same five-invoice fixture (two customers with several invoices, a paid one, a draft and a credit note) and assert the exact rows. Writing them found no bugs in the reports, but two of my own expectations were wrong at first, which is a good sign the tests now actually check something.';

export const CSV_REQUEST =
  'Product wants the tax summary as a CSV for the accountant: German Excel, so semicolons and decimal commas, header row in German (Steuersatz, Rechnungen, Netto, Steuer), CRLF line endings. Can you add that next to taxSummary, with tests?';

export const CSV_ANCHOR = '/** Renders taxSummary rows as an aligned text table (for the CLI and e-mails). */';

export const CSV_BUGGY_LINE = "  return [header, ...body].map((cells) => cells.join(';')).join('\\n');";
export const CSV_FIXED_LINE = "  return [header, ...body].map((cells) => `${cells.join(';')}\\r\\n`).join('');";

export const CSV_FIRST_TRY = `/**
 * The tax summary as CSV for the accountant: semicolon-separated with decimal commas (what German Excel opens
 * without an import dialog), a German header row and CRLF line endings.
 */
export function taxSummaryCsv(rows: readonly TaxLine[]): string {
  const decimal = (value: string) => value.replace('.', ',');
  const header = ['Steuersatz', 'Rechnungen', 'Netto', 'Steuer'];
  const body = rows.map((r) => [\`\${decimal((Number(r.key) * 100).toFixed(1))} %\`, String(r.invoices), decimal(r.net), decimal(r.tax)]);
${CSV_BUGGY_LINE}
}

${CSV_ANCHOR}`;

export const CSV_TEST = `import { describe, expect, it } from 'vitest';
import { taxSummary, taxSummaryCsv } from '../../src/reports/taxSummary.js';
import { record } from './fixtures.js';

describe('taxSummaryCsv', () => {
  it('writes a header and one row per rate, with decimal commas and CRLF', () => {
    const rows = taxSummary(
      [
        record({ number: 'INV-1', status: 'finalized', net: '1000.00', tax: '190.00', gross: '1190.00' }),
        record({ number: 'INV-2', status: 'paid', net: '200.50', tax: '14.04', gross: '214.54' }),
      ],
      { asOf: '2024-06-30' },
    );
    expect(taxSummaryCsv(rows)).toBe('Steuersatz;Rechnungen;Netto;Steuer\\r\\n19,0 %;1;1000,00;190,00\\r\\n7,0 %;1;200,50;14,04\\r\\n');
  });

  it('writes only the header when there is nothing to report', () => {
    expect(taxSummaryCsv([])).toBe('Steuersatz;Rechnungen;Netto;Steuer\\r\\n');
  });
});
`;

export const CSV_BUG =
  "Both failures are mine: I documented CRLF line endings and then joined with `'\\n'`, and without a line ending after the last row. Excel doesn't care about the final newline, but the accountant's import tool reportedly does, so every row (including the last) ends with `\\r\\n` now.";

export const CSV_DONE =
  '`taxSummaryCsv(rows)` is in `src/reports/taxSummary.ts` with two tests. Example output:\n\n```\nSteuersatz;Rechnungen;Netto;Steuer\n19,0 %;1;1000,00;190,00\n7,0 %;1;200,50;14,04\n```\n\nNote that the amounts have no thousands separator (`1000,00`, not `1.000,00`): Excel reads both, and the plain form is safer for other tools. I did not export it from `src/index.ts` since you asked me not to touch the public API — tell me if it should be public.';

export const COVERAGE_REQUEST =
  'CI also has a coverage gate (85% lines and functions). Can you check we are still above it?';

function coverageTable(after: boolean, clock: string): string {
  const rows: [string, number, number, number, number][] = [
    ['All files', 93.41, 88.2, after ? 91.3 : 84.06, 93.41],
    [' src', 96.12, 90.0, 95.0, 96.12],
    ['  currency.ts', 100, 100, 100, 100],
    ['  dates.ts', after ? 100 : 86.04, after ? 100 : 83.33, after ? 100 : 71.42, after ? 100 : 86.04],
    ['  index.ts', 100, 100, 100, 100],
    ['  money.ts', 98.93, 95.83, 100, 98.93],
    [' src/api', 91.48, 80.0, 85.71, 91.48],
    ['  server.ts', 84.21, 66.66, 100, 84.21],
    [' src/api/routes', 94.73, 85.71, 100, 94.73],
    ['  invoices.ts', 94.73, 85.71, 100, 94.73],
    [' src/format', 100, 92.3, 100, 100],
    ['  percent.ts', 100, 100, 100, 100],
    ['  receipt.ts', 100, 91.66, 100, 100],
    [' src/invoice', 92.9, 87.5, after ? 88.88 : 77.77, 92.9],
    ['  invoice.ts', 97.11, 92.3, 90.9, 97.11],
    ['  lineItem.ts', 100, 100, 100, 100],
    ['  repository.ts', 80.85, 66.66, after ? 83.33 : 66.66, 80.85],
    [' src/reports', 90.12, 84.61, 87.5, 90.12],
    [' src/tax', 100, 100, 100, 100],
    ['  calculator.ts', 100, 100, 100, 100],
    ['  rates.ts', 100, 100, 100, 100],
  ];
  const line = (cells: (string | number)[]) =>
    `${String(cells[0]).padEnd(17)}|${cells
      .slice(1)
      .map((c) => String(c).padStart(8))
      .join(' |')} |`;
  const out = [
    '',
    ' RUN  v1.6.0 /home/dev/ledgerline',
    '      Coverage enabled with v8',
    '',
    ` Test Files  ${after ? 17 : 17} passed (17)`,
    `      Tests  ${after ? 87 : 84} passed (${after ? 87 : 84})`,
    `   Start at  ${clock}`,
    '',
    ' % Coverage report from v8',
    '-----------------|---------|----------|---------|---------|',
    'File             | % Stmts | % Branch | % Funcs | % Lines |',
    '-----------------|---------|----------|---------|---------|',
    ...rows.map((r) => line(r)),
    '-----------------|---------|----------|---------|---------|',
  ];
  if (!after) {
    out.push('ERROR: Coverage for functions (84.06%) does not meet global threshold (85%)', '', '[exit code 1]');
  }
  return out.join('\n');
}

export const coverageBefore = (clock: string) => coverageTable(false, clock);
export const coverageAfter = (clock: string) => coverageTable(true, clock);

export const COVERAGE_ANCHOR = `  it('refuses negative payment terms', () => {`;

export const COVERAGE_TESTS = `  it('formats today in UTC, whatever the local time zone', () => {
    expect(today(new Date('2024-03-10T23:30:00-08:00'))).toBe('2024-03-11');
  });

  it('keeps a weekend start on the next business days', () => {
    expect(addBusinessDays('2024-03-09', 1)).toBe('2024-03-11');
    expect(addBusinessDays('2024-03-10', 5)).toBe('2024-03-15');
  });

  it('refuses negative payment terms', () => {`;

export const COVERAGE_DONE =
  'Functions coverage was at 84.06%, just under the 85% gate: `today()` in `src/dates.ts` and `InMemoryInvoiceRepository.list()` had no test at all after the refactor moved some tests around. I added a test for `today()` (it must format in UTC, like the rest of the module) and one for business days starting on a weekend; functions are at 91.3% now. `list()` is still only covered through the API test — fine for the gate, but a direct test would be cheap if you want one.';

export const BACKFILL_REQUEST =
  'Last thing: can you run the backfill script in dry-run mode for DE to double-check the new rate lookup works there too?';

export const BACKFILL_OUTPUT = `
> ledgerline@2.3.0 backfill:tax
> tsx scripts/backfill-tax.ts --region DE --dry-run

0 of 0 draft invoices would change`;

export const BACKFILL_FINDING = `It runs, but it proves nothing: "0 of 0". The script creates its own \`new InMemoryInvoiceRepository(0)\`, which is always empty, so it never looks at real data — and it never did, before or after today's changes. It looks like a stub that was committed before the SQL repository existed.

The rate lookup itself is right (it uses each draft's \`issuedAt\`), but to be useful the script needs the real repository (the connection settings the API uses). That's a bigger change than a fix; do you want me to do it now or should I open an issue?`;

export const BACKFILL_ISSUE_REQUEST = 'Open an issue for it please, assign it to Jonas, label tech-debt.';

export const GH_ISSUE_COMMAND = `gh issue create --title "backfill-tax script only ever sees an empty in-memory repository" --assignee jonas-weber --label tech-debt --body "scripts/backfill-tax.ts creates \\\`new InMemoryInvoiceRepository(0)\\\`, so it always reports '0 of 0 draft invoices' and never touches real data. It should use the same repository as the API (DATABASE_URL). Found while fixing the suite after #412; the rate lookup itself now uses each draft's issuedAt."`;

export const FINAL_WRAP_UP = `Opened #447 (assigned to Jonas, labelled tech-debt).

Where things stand:
- one commit on top of origin/main (5b2e9f1), rebased, **not pushed**; since then I also added the TSDoc comments, the real report tests, \`taxSummaryCsv\` and two date tests, which are uncommitted;
- lint, typecheck, tests (UTC and Los Angeles), Node 18 and coverage all pass;
- open questions for you: pin \`@types/node\` to 18, export \`taxSummaryCsv\` publicly, and push/open the PR.`;

export const THANKS =
  'Perfect, thanks a lot! I will review and push myself. Amend the last commit with the new changes please.';

export const AMEND_OUTPUT = `[main 0c7d4e2] fix: repair the test suite after the tax refactor
 Date: Thu Jun 20 11:41:07 2024 +0200
 31 files changed, 498 insertions(+), 121 deletions(-)
0c7d4e2 fix: repair the test suite after the tax refactor
a81d5e7 feat(tax): locale-aware percent labels (#440)`;

export const GOODBYE =
  'Amended: everything is in 0c7d4e2 on top of origin/main, not pushed. The PR description above still fits; add "TSDoc for the report functions, exact report tests, `taxSummaryCsv`, date tests for coverage" to the list when you open it.';

export const AUDIT_REQUEST =
  "Before you write the PR: can you do a review pass over src/ for more of the same kinds of bugs? Local-time date math, hand-rolled rounding or float money math, missing awaits, anything that depends on the real clock. I'd rather find them now than in CI next week.";

export const AUDIT_FINDINGS = `Review done. I read every module outside \`src/reports/\` (the reports only use string amounts summed in cents and UTC date helpers, which I checked with the greps above). Findings, most important first:

1. **\`LineItem.net()\` applies the discount on the float value** — \`gross.multiply(1 - discount / 100).round()\`. For 15 % of 1,200 that's fine, but \`1 - 0.07\` is \`0.9299999999999999\`, so a 7 % discount on 9.99 rounds differently from what an accountant computes by hand (9.29 vs 9.29 here, but 3 × 33.35 at 7 % gives 93.04 instead of 93.05). Not covered by tests. **Suggest**: compute the discount in cents. Small change — I can do it.
2. **\`/invoices/:number\` recomputes nothing but trusts the stored \`dueOn\`** — fine, and it uses the injected clock; no issue.
3. **\`buildServer\`'s "run when executed directly" check** compares \`import.meta.url\` with \`file://\${process.argv[1]}\`: breaks on paths with spaces or on Windows. Harmless for tests; \`pathToFileURL(process.argv[1]).href\` would be correct.
4. **\`InMemoryInvoiceRepository.save\`** releases the lock in \`finally\` — good — but \`get\`/\`list\` don't respect it; the SQL repository does. Only matters for tests that rely on locking reads; none do.
5. **\`routes/invoices.ts\` casts \`body.currency as never\`** after validating it with \`isCurrencyCode\` — works, but the type guard is lost through zod's \`refine\`. A \`z.enum\` over the currency codes would keep the type.
6. **\`dates.today()\`** is fine (UTC), and no other module uses the real clock: the server and the routes go through the injected \`now\`.
7. No other missing \`await\`s: every call on the repository is awaited (checked with the grep for \`repository\\.\\|repo\\.\` above).

Nothing else with the same root causes as today's bugs. I'd fix (1) now since it's money; (3) and (5) are cleanups for a separate PR.`;

export const AUDIT_GO = 'Fix 1 please, leave the rest for later, but mention them in the PR description.';

export const DISCOUNT_OLD = `  net(): Money {
    const gross = this.unitPrice.multiply(this.quantity);
    return gross.multiply(1 - this.discountPercent / 100).round();
  }`;

export const DISCOUNT_NEW = `  net(): Money {
    const gross = this.unitPrice.multiply(this.quantity).round();
    if (this.discountPercent === 0) return gross;
    // the discount is computed on the rounded gross, in minor units, like an accountant would
    const discount = gross.multiply(this.discountPercent / 100).round();
    return gross.subtract(discount).round();
  }`;

export const DISCOUNT_TEST_ANCHOR = `  it('computes the due date from the payment terms', () => {`;

export const DISCOUNT_TEST = `  it('computes discounts on the rounded gross, in cents', () => {
    const invoice = new Invoice('INV-1103', 'cust-1', 'EUR', '2024-05-01');
    invoice.addLine({ description: 'Licences', quantity: 3, unitPrice: 33.35, discountPercent: 7 });
    expect(invoice.totals().net.amount).toBe(93.05);
  });

  it('computes the due date from the payment terms', () => {`;

export const CURRENCY_REQUEST =
  'Another one for the reports: if records in several currencies are passed without the `currency` option, they silently add EUR and USD together. Can you make each report throw a clear error in that case, with a test per report?';

export function currencyGuard(name: string): { old: string; replacement: string } {
  return {
    old: '  const groups = new Map<string, InvoiceRecord[]>();\n  for (const record of records) {',
    replacement: `  if (!options.currency) {
    const currencies = new Set(records.map((r) => r.currency));
    if (currencies.size > 1) {
      throw new RangeError(\`${name}: records in several currencies (\${[...currencies].sort().join(', ')}); pass options.currency\`);
    }
  }
  const groups = new Map<string, InvoiceRecord[]>();
  for (const record of records) {`,
  };
}

export function currencyTest(name: string): { old: string; replacement: string } {
  return {
    old: "  it('ignores invoices in other currencies', () => {",
    replacement: `  it('refuses to mix currencies without a currency option', () => {
    const mixed = [...records, record({ number: 'INV-7999', currency: 'USD' })];
    expect(() => ${name}(mixed, { asOf })).toThrow('${name}: records in several currencies (EUR, USD); pass options.currency');
    expect(() => ${name}(mixed, { asOf, currency: 'EUR' })).not.toThrow();
  });

  it('ignores invoices in other currencies', () => {`,
  };
}

export const CURRENCY_DONE =
  'Every report now throws `RangeError: <report>: records in several currencies (EUR, USD); pass options.currency` when it gets mixed currencies without a `currency` option, and each report test checks both the error and that the filter still works. Single-currency callers (the API and the monthly e-mail job) are unaffected.';

export const LOCAL_CI_REQUEST =
  'Before I push: can you run everything CI runs, locally, both time zones and Node 18, with verbose output so I can skim the test names? And add a CHANGELOG entry under Unreleased.';

export const CHANGELOG_ENTRY = `## [Unreleased]

### Fixed

- Tax calculation after the rate refactor: callers use \`rateFor(region, category, on)\` with the invoice date (#412)
- \`Money.round()\` rounds half to even again, including 1.005 EUR and negative JPY amounts (#431)
- \`Invoice.finalize()\` waits for the repository and stays in draft when saving fails
- Date arithmetic in time zones west of UTC and across DST changes
- Discounts are computed on the rounded gross, in cents
- Node 18 support in the reports (no \`Array.prototype.toSorted\`)

### Changed

- \`Invoice.totals()\` is linear in the number of lines (5,000 lines: 2.3 s → 4 ms)
- Reports refuse records in several currencies without a \`currency\` option

### Added

- \`taxSummaryCsv()\` for the accountant's CSV export`;

export const LOCAL_CI_DONE =
  'Everything CI runs passes locally: lint, typecheck, the suite in UTC and in America/Los_Angeles, and on Node 18 in Docker (verbose output above). The CHANGELOG has an Unreleased section listing the fixes, the two behaviour changes and the CSV export.';
