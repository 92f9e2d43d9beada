// Texts of the English coding-agent sample: the user's requests, the agent's narration and explanations, and the
// outputs of commands whose result does not come from the repository model (git history, node probes, benches).

import { lintProblems } from './checks.js';
import type { VirtualRepo } from './repo.js';

export * from './codingTexts2.js';

export const SYSTEM_PROMPT = `You are Forge, a coding agent working in the user's repository through tools.

Tools:
- read_file(path, start_line?, end_line?): file content with line numbers
- edit_file(path, old_string, new_string): replace one exact, unique occurrence
- write_file(path, content): create or overwrite a file
- run_command(command): run a shell command in the repository root (bash, 120 s timeout); output and exit code

Rules:
- Read before you edit. Keep changes minimal and in the style of the surrounding code.
- Run the relevant tests after each change; run the whole suite before you say you are done.
- Never change tests to make them pass unless the test itself is wrong; say so when you do.
- Do not change the public API exported from src/index.ts without asking.
- Explain root causes briefly; the user reads your messages in a terminal.
- Working directory: /home/dev/ledgerline (git repository, Node 20.12, npm 10).`;

export const FIRST_REQUEST =
  "Hey! I merged the `tax-refactor` branch into main yesterday and now `npm test` is a sea of red, and CI is failing too. Can you get the test suite green again? Please don't change the public API in src/index.ts unless there's no other way, we published 2.3.0 last week. I'll be around if you have questions.";

export const ORIENT = [
  "I'll start by looking at the state of the repository and what the refactor changed.",
  'Let me get oriented first: recent history, layout, then a test run.',
  'First a quick look at the repository and the recent commits.',
];

export function gitStatusAndLog(): string {
  return `On branch main
Your branch is up to date with 'origin/main'.

nothing to commit, working tree clean
4d0c1f9 Merge branch 'tax-refactor'
8c41d2e refactor(tax): rates depend on the supply date; rename getRate -> rateFor (#412)
b71e0a3 feat(receipt): label tax lines "Tax (VAT x%)" (#398)
e93a7c5 refactor(money): simplify rounding
2a6f0b8 test(api): overdue invoices
91c3d44 chore(ci): run the suite in two time zones
7be2210 feat(reports): cash flow forecast per week
5fd8a19 feat(reports): top customers
c0e4b27 fix(receipt): align totals for 3-digit currencies
3aa9e61 chore(deps): bump fastify to 4.26.2
6b1d0f2 feat(api): tax preview endpoint
0f7c3e8 release: 2.3.0`;
}

export function tree(repo: VirtualRepo): string {
  const dirs = new Map<string, string[]>();
  for (const path of repo.paths()) {
    if (!/^(src|test|scripts|bench)\//.test(path)) continue;
    const dir = path.slice(0, path.lastIndexOf('/'));
    dirs.set(dir, [...(dirs.get(dir) ?? []), path.slice(path.lastIndexOf('/') + 1)]);
  }
  const out: string[] = [];
  for (const [dir, files] of [...dirs.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`${dir}:`, ...files, '');
  }
  return out.slice(0, 80).join('\n');
}

export const READ_CONFIG = [
  'Now the test setup and the CI workflow.',
  'Checking how tests are configured and run in CI.',
];

export const FIRST_RUN = [
  'Now the full suite, to see what exactly fails.',
  "Let's see the failures.",
  'Running the whole suite once to get the full picture.',
];

export const FIRST_ANALYSIS = `Here is what is failing, grouped by cause (several test files fail for the same reason):

1. **\`getRate is not a function\`** — the tax refactor (8c41d2e) renamed \`getRate(region, category)\` to \`rateFor(region, category, on)\` in \`src/tax/rates.ts\`, but \`TaxCalculator\` still imports the old name. Everything that computes totals goes through the calculator, so this one breaks the calculator tests, the invoice totals, \`finalize\`, the receipts and the \`POST /invoices\` API test.
2. **Rounding** — \`Money.round\` was "simplified" to \`toFixed\` in e93a7c5; \`toFixed\` rounds half *up* on the binary value, while the tests (and the tax rules) want half-to-even.
3. **\`/tax/preview\`** — the route also calls \`getRate\`.
4. **The overdue API test** — expects \`overdueDays: 14\` but gets 20. That smells like a test that depends on today's date.

There may be more hidden behind the first one (finalize and the receipt snapshot can only be judged once totals work). I'll fix the rename first since it masks the most.`;

export const LOOK_AT_TAX = ['Let me read the calculator and the rates module.', 'Starting with the tax modules.'];

export const CHECK_HISTORY = [
  'Four places still use the old name. Let me check what exactly the refactor changed in the signature.',
  'Before I rename anything, let me see the refactor commit.',
];

export function ratesLog(): string {
  return `8c41d2e refactor(tax): rates depend on the supply date; rename getRate -> rateFor (#412)
d4b9a10 feat(tax): Finnish rate change from 2024-09-01
77c0e52 feat(tax): Luxembourg temporary rate cut 2023
1e2f3a4 feat(tax): reduced and super-reduced categories
9a8b7c6 feat(tax): VAT table by region`;
}

export function refactorCommitStat(): string {
  return `commit 8c41d2e0b5a4f6c1d9e8a7b6c5d4e3f2a1b0c9d8
Author: Jonas Weber <jonas.weber@acme-finance.dev>
Date:   Wed Jun 19 16:48:02 2024 +0200

    refactor(tax): rates depend on the supply date; rename getRate -> rateFor (#412)

    Rates change over time (DE 2020, IE 2020/21, LU 2023, FI 2024), so a lookup
    without a date silently used today's rate for old invoices. rateFor() takes
    the supply date and the table now has validity periods.

    BREAKING (internal): getRate(region, category) is gone; use
    rateFor(region, category, on).

 src/tax/rates.ts            | 112 +++++++++++++++++++++++++++++--------------
 test/tax/calculator.test.ts |  24 +++++-----
 test/tax/rates.test.ts      |  41 ++++++++++++++++
 3 files changed, 124 insertions(+), 53 deletions(-)`;
}

export const FIX_IMPORT = [
  'The refactor changed the table and the tests but none of the callers. Starting with the calculator.',
  "The callers were never updated. I'll switch the calculator to `rateFor` first.",
];

export const RERUN_TAX = ['Re-running the tax tests.', 'Checking the tax tests again.'];

export const NEEDS_DATE =
  'Progress, but as expected `rateFor` now needs the date, and I passed only two arguments (the tests run without a typecheck, so nothing complained). The updated calculator tests already call `taxFor(line, region, date)` — let me read them to match the intended signature.';

export const THREAD_DATE = [
  'The tests pass the invoice date as a third argument to `taxFor`. I will thread an `on: IsoDate` parameter through `rateOf` and `taxFor`.',
  'So the intended API is `taxFor(line, region, on)`. Adding the date parameter.',
];

export const NOW_INVOICE = [
  'Tax tests are green. Now the invoice tests, which use the calculator.',
  'Now the invoice module.',
];

export const PASS_ISSUE_DATE = [
  "`Invoice.totals()` calls the calculator without a date. The supply date of an invoice is its issue date (that's what the refactor's tests use), so I'll pass `this.issuedAt`.",
  'The invoice should pass its issue date to the calculator.',
];

export const ROUTES_TOO = [
  'The `/tax/preview` route still imports `getRate` as well.',
  'Next the API route that still uses `getRate`.',
];

export const API_STATUS =
  'The preview endpoint now takes an optional `on` date (defaulting to today from the injected clock, so tests can pin it). The remaining API failure is the overdue test; I will come back to it after the rounding and `finalize` failures.';

export const LOOK_AT_MONEY = ['Now the rounding failures.', 'On to `Money.round`.'];

export function roundingLog(): string {
  return `e93a7c5 refactor(money): simplify rounding
diff --git a/src/money.ts b/src/money.ts
--- a/src/money.ts
+++ b/src/money.ts
@@ -46,13 +46,6 @@
   /** Rounds to the currency's minor unit, half to even (banker's rounding), as the tax authorities require. */
   round(): Money {
     const digits = minorUnits(this.currency);
-    const factor = 10 ** digits;
-    const scaled = Number((this.amount * factor).toPrecision(15));
-    const floor = Math.floor(scaled);
-    const diff = scaled - floor;
-    if (diff > 0.5 || (diff === 0.5 && floor % 2 !== 0)) return new Money((floor + 1) / factor, this.currency);
-    return new Money(floor / factor, this.currency);
+    // refactor(tax): toFixed already rounds, no need for the hand-written version
+    return new Money(Number(this.amount.toFixed(digits)), this.currency);
   }
91c0ffe feat(money): banker's rounding for tax amounts (#377)`;
}

export const TOFIXED_PROBE = `0.125 0.13 0 12.5
2.675 2.67 3 267.49999999999997
1.005 1.00 1 100.49999999999999
2.5 2.50 3 250
-0.125 -0.13 -0 -12.5`;

export const ROUNDING_EXPLANATION = `That confirms it. \`toFixed\` is not a rounding function you can rely on for money:

- it rounds ties **away from zero** (\`0.125 → 0.13\`, \`2.5 → 3\`), but the ledger needs **half to even** (\`0.125 → 0.12\`, \`2.5 → 2\`), which is what #377 implemented and what the tests check;
- it works on the binary value, so \`2.675\` (really 2.67499999999999982236431605997495353221893310546875) becomes \`2.67\`, and \`1.005\` becomes \`1.00\` by accident.

I'll restore a hand-written half-to-even rounding on the scaled value rather than revert to the old code blindly, since I want to handle the binary noise explicitly.`;

export const TRUNC_MISTAKE =
  'Almost: negative ties are wrong. `Math.trunc(-3.5)` is `-3`, and since -3 is odd my code moves *up* to -2 instead of down to -4. For negative numbers the lower neighbour is `Math.floor`, not `trunc`. Also, exact `=== 0.5` misses ties hidden by binary noise (`1.005 * 100` is `100.49999999999999`), so I will compare with a small tolerance.';

export const LOOK_AT_FINALIZE = ['Now `finalize`.', 'Next: the finalize tests and the repository.'];

export const FINALIZE_EXPLANATION = `Found it: \`finalize()\` calls \`repo.save(record)\` **without \`await\`**, then marks the invoice as finalized right away. So:

- the first test reads the repository before the (5 ms) save has happened, and gets \`undefined\`;
- when the save fails (the invoice is locked), the rejection is never observed by \`finalize\` — the promise resolves, the status is already \`finalized\`, and the rejection surfaces later as the "Unhandled Rejection" Vitest reports.

Awaiting the save before changing the status fixes both, and it's the behaviour the tests describe (stay in draft when saving fails).`;

export const LOOK_AT_SNAPSHOTS = ['Now the receipt snapshots.', 'Checking the receipt tests.'];

export function receiptCommit(): string {
  return `commit b71e0a3f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f
Author: Mira Okafor <mira.okafor@acme-finance.dev>
Date:   Tue Jun 18 11:02:45 2024 +0200

    feat(receipt): label tax lines "Tax (VAT x%)" (#398)

    Customers in the UK pilot were confused by a bare "VAT 19%" line.

 src/format/receipt.ts | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)`;
}

export const ASK_ABOUT_SNAPSHOTS = `The receipt failures are now only snapshot mismatches: commit b71e0a3 (#398) deliberately changed the tax lines from \`VAT 19%\` to \`Tax (VAT 19%)\`, but the snapshots were not updated in that PR.

Before I update them: **was that label change intended?** If yes I'll run \`vitest -u\` for the receipt tests; if not, I'll revert the label instead. (Everything else I've fixed so far doesn't depend on this.)`;

export const SNAPSHOT_ANSWER =
  'Yes, the label change is intentional, product asked for it (#398). Go ahead and update the snapshots. Also, the overdue test in the API suite has been failing on and off, can you look at that too?';

export const UPDATE_SNAPSHOTS = ['Updating the two receipt snapshots.', 'OK, updating the snapshots.'];

export function updatedSnapshot(snap: string): string {
  const pad = (left: string, right: string) =>
    `${left}${' '.repeat(Math.max(1, 48 - left.length - right.length))}${right}`;
  return snap.replace(/^ {2}VAT (\d+)% +(\S+ EUR)$/gm, (_m, rate: string, amount: string) =>
    pad(`  Tax (VAT ${rate}%)`, amount),
  );
}

export function snapshotUpdateOutput(clock: string): string {
  return `
 RUN  v1.6.0 /home/dev/ledgerline

 ✓ test/format/receipt.test.ts  (2 tests) 9ms

 Snapshots  2 updated
 Test Files  1 passed (1)
      Tests  2 passed (2)
   Start at  ${clock}
   Duration  812ms (transform 141ms, setup 0ms, collect 266ms, tests 9ms, environment 0ms, prepare 97ms)
`;
}

export const LOOK_AT_OVERDUE = ['Now the overdue test.', 'Looking at the overdue API test.'];

export const TIME_BOMB = `It's a time bomb: the test stores an invoice due on 2024-05-31 and expects it to be **14** days overdue. The route computes \`daysBetween(dueOn, today(now()))\` with the real clock, so the test only passed on 2024-06-14 — the day it was written (2a6f0b8). Today it's 20 days, tomorrow 21.

The server already accepts an injected \`now\` (the route uses \`options.now()\`), so the fix belongs in the test: pin the clock to the day the expectation was written for. No production change needed.`;

export const FULL_RUN = ['Full suite now.', 'Running everything.'];

export function summaryAfterGreen(): string {
  return `The suite is green locally (UTC). Summary of the fixes:

| failure | cause | fix |
|---|---|---|
| \`getRate is not a function\` (calculator, totals, finalize, receipts, API) | #412 renamed \`getRate\` → \`rateFor(region, category, on)\` without updating callers | \`TaxCalculator.rateOf/taxFor\` take the supply date; \`Invoice.totals\` passes \`issuedAt\`; \`/tax/preview\` takes an optional \`on\` |
| rounding (4 tests) | e93a7c5 replaced half-to-even rounding by \`toFixed\` | restored half-to-even on the scaled value, with a tolerance for binary noise and \`floor\` for negatives |
| \`finalize\` (2 tests + unhandled rejection) | \`repo.save\` not awaited | \`await\` before changing the status |
| receipt snapshots | intentional label change in #398 | snapshots updated (confirmed by you) |
| overdue API test | depended on today's date | the test pins \`now\` |

No change to \`src/index.ts\`; \`TaxCalculator.taxFor\` gained a parameter, but the calculator's own tests (updated in #412) already expected that.`;
}

export function ciDatesRequest(): string {
  return `Great work! CI is still red though, on the America/Los_Angeles jobs only. The dates tests pass on my laptop but fail there. Here's the log from the job:

\`\`\`
Run npm test

> ledgerline@2.3.0 test
> vitest run

 RUN  v1.6.0 /home/runner/work/ledgerline/ledgerline

 ✓ test/money.test.ts  (13 tests) 11ms
 ❯ test/dates.test.ts  (9 tests | 3 failed) 14ms
   ❯ test/dates.test.ts > dates > adds days across the spring DST change
     → expected '2024-03-30' to be '2024-03-31' // Object.is equality
   ❯ test/dates.test.ts > dates > knows weekends
     → expected false to be true // Object.is equality
   ❯ test/dates.test.ts > dates > adds business days, skipping weekends
     → expected '2024-03-09' to be '2024-03-11' // Object.is equality
 ❯ test/invoice/totals.test.ts  (3 tests | 1 failed) 9ms
   ❯ test/invoice/totals.test.ts > Invoice.totals > computes the due date from the payment terms
     → expected '2024-03-14' to be '2024-03-15' // Object.is equality
 ✓ test/tax/calculator.test.ts  (8 tests) 6ms
 ✓ test/tax/rates.test.ts  (3 tests) 5ms
 ✓ test/format/receipt.test.ts  (2 tests) 8ms
 ✓ test/invoice/finalize.test.ts  (4 tests) 41ms
 ✓ test/api/invoices.test.ts  (5 tests) 187ms

 Test Files  2 failed | 14 passed (16)
      Tests  4 failed | 76 passed (80)
Error: Process completed with exit code 1.
\`\`\`

Why would that be, and can you fix it properly?`;
}

export const LOOK_AT_DATES = ['Let me look at the date helpers.', 'Reading the date module and its tests.'];

export const TZ_PROBE_COMMAND = `for tz in UTC Europe/Berlin America/Los_Angeles; do TZ=$tz node -e "const d = new Date('2024-03-01'); console.log(process.env.TZ.padEnd(20), d.toISOString(), 'getDate=' + d.getDate(), 'getUTCDate=' + d.getUTCDate(), 'getDay=' + d.getDay()); d.setDate(d.getDate() + 30); console.log(''.padEnd(20), '+30 local ->', d.toISOString())"; done`;

export const TZ_PROBE_OUTPUT = `UTC                  2024-03-01T00:00:00.000Z getDate=1 getUTCDate=1 getDay=5
                     +30 local -> 2024-03-31T00:00:00.000Z
Europe/Berlin        2024-03-01T00:00:00.000Z getDate=1 getUTCDate=1 getDay=5
                     +30 local -> 2024-03-31T00:00:00.000Z
America/Los_Angeles  2024-03-01T00:00:00.000Z getDate=29 getUTCDate=1 getDay=4
                     +30 local -> 2024-03-30T23:00:00.000Z`;

export const TZ_EXPLANATION = `That's the whole story in three lines:

1. \`new Date('2024-03-01')\` — a date-only ISO string — is parsed as **UTC midnight**.
2. \`getDate()\` / \`setDate()\` / \`getDay()\` work in the **local time zone** of the process. In Los Angeles, UTC midnight on March 1 is still **February 29, 16:00**, so \`getDay()\` says Thursday and the weekend check is off by one day.
3. Adding 30 days in local time crosses the US DST change (March 10): the local clock keeps 16:00 but that is now 23:00 UTC, so \`toISOString()\` gives **2024-03-30**.

Your laptop (and the UTC CI job) has local time = UTC, so the mix of UTC parsing and local arithmetic never shows. Berlin is east of UTC, so it doesn't show there either for these dates. It only breaks west of UTC, plus around DST changes.

The proper fix is to stay in UTC end to end: \`setUTCDate/getUTCDate\` and \`getUTCDay\`. I'll also document that on \`parseIsoDate\`, and grep for other local-time accessors.`;

export const RERUN_ZONES = ['Re-running in Los Angeles time.', 'Checking the failing zone again.'];

export const ZONE_LOOP_COMMAND =
  'for tz in UTC America/Los_Angeles America/New_York Europe/Berlin Asia/Tokyo Pacific/Auckland Pacific/Honolulu; do printf "%-20s" $tz; TZ=$tz npx vitest run test/dates.test.ts test/invoice --reporter=dot 2>&1 | grep -E "Tests +"; done';

export function zoneLoopOutput(): string {
  return [
    'UTC',
    'America/Los_Angeles',
    'America/New_York',
    'Europe/Berlin',
    'Asia/Tokyo',
    'Pacific/Auckland',
    'Pacific/Honolulu',
  ]
    .map((tz) => `${tz.padEnd(20)}      Tests  16 passed (16)`)
    .join('\n');
}

export const TZ_SUMMARY = `Fixed, and verified in seven time zones (including ones east of UTC and one without DST):

- \`addDays\` uses \`setUTCDate(getUTCDate() + days)\`;
- \`isWeekend\` uses \`getUTCDay()\`;
- \`parseIsoDate\` documents that its result must only be read with UTC accessors.

The grep found no other local-time accessors in \`src/\`. \`endOfMonth\` and the ISO week helper in the cash-flow report already used the UTC variants, which is why they were never affected.

A suggestion for later: since CI runs in two time zones precisely to catch this, it might be worth running \`TZ=America/Los_Angeles npm test\` as a pre-push hook too.`;

export const LINT_REQUEST =
  'Nice explanation, thanks. CI runs lint and typecheck before the tests, can you make sure both pass as well?';

export const LINT_PLAN =
  "ESLint reports problems in the report modules only, all mechanical: unused imports of `Money`, `any` parameters that should be `InvoiceRecord`, and `let` where `const` is meant. None of them were introduced by today's changes, but CI fails on them (`--max-warnings 0`). I'll fix them file by file rather than with `--fix`, since `--fix` would not touch the `any`s.";

export const LINT_AGAIN = ['Lint again.', 'Re-running ESLint on the whole project.'];

export const BACKFILL_FIX = [
  'The backfill script still uses `getRate`. Each draft invoice has its own issue date, which is the right date for the lookup.',
  "Fixing the backfill script the same way as the calculator: the record's issue date is the supply date.",
];

export const CHECKS_SUMMARY =
  'Lint, typecheck and tests all pass now. The typecheck caught one more caller of `getRate` (the backfill script), and three report formatters that indexed `body[0]` without a check under `noUncheckedIndexedAccess`.';

export function eslintFileOutput(repo: VirtualRepo, path: string): string {
  const left = lintProblems(repo).filter((p) => p.path === path);
  if (left.length === 0) return '';
  return `${repo.root}/${path}\n${left.map((p) => `  ${p.line}:${p.col}  ${p.severity}  ${p.message}  ${p.rule}`).join('\n')}\n\n[exit code 1]`;
}
