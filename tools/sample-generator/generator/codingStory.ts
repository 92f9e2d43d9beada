// biome-ignore-all lint/suspicious/noTemplateCurlyInString: this file writes TypeScript source of the fictional repository as strings
// The English coding-agent sample: a user asks an agent to get the failing test suite of `ledgerline` green after
// a tax refactor; the agent explores, edits, re-runs, explains, and handles the user's follow-ups (CI time zones,
// lint, typecheck, Node 18, performance, rebase, docs, real report tests, a CSV export).
import type { ChatMessage } from '../../../engine/index.js';
import { AgentSession } from './agentSession.js';
import { lintOutput, tscOutput } from './checks.js';
import { ciFailedLog } from './ciLogs.js';
import * as text from './codingTexts.js';
import type { Rng } from './random.js';
import { VirtualRepo } from './repo.js';
import { initialRepoFiles, REPORTS, type ReportSpec } from './repoFiles.js';
import { realReportTestContent, reportTestMistake, reportTestRun } from './reportTests.js';
import { vitestOutput } from './testRunner.js';

const LA = { tz: 'America/Los_Angeles', node: 20 } as const;
const NODE18 = { tz: 'UTC', node: 18 } as const;

export function codingSession(rng: Rng): ChatMessage[] {
  const repo = new VirtualRepo(initialRepoFiles(rng));
  const s = new AgentSession(rng, repo);
  const say = (options: readonly string[]) => rng.pick(options);
  const maybe = (options: readonly string[], p = 0.6) => (rng.chance(p) ? rng.pick(options) : null);

  s.system(text.SYSTEM_PROMPT);
  s.user(text.FIRST_REQUEST);

  // ---- 1. orientation
  s.call(maybe(text.ORIENT), s.run('git status && git log --oneline -12', text.gitStatusAndLog()));
  s.call(
    null,
    s.run('ls -R src test scripts bench | head -80', () => text.tree(repo)),
  );
  s.call(maybe(text.READ_CONFIG), s.read('package.json'), s.read('vitest.config.ts'));
  s.call(null, s.read('.github/workflows/ci.yml'));
  s.call(null, s.read('CHANGELOG.md'));
  s.call(say(text.FIRST_RUN), s.test());
  s.say(text.FIRST_ANALYSIS);

  // ---- 2. the getRate → rateFor rename
  s.call(maybe(text.LOOK_AT_TAX), s.read('src/tax/calculator.ts'), s.read('src/tax/rates.ts'));
  s.call(null, s.grep('getRate'));
  s.call(say(text.CHECK_HISTORY), s.run('git log --oneline -5 -- src/tax/rates.ts', text.ratesLog()));
  s.call(null, s.run('git show --stat 8c41d2e', text.refactorCommitStat()));
  s.call(
    say(text.FIX_IMPORT),
    s.edit('src/tax/calculator.ts', "import { getRate } from './rates.js';", "import { rateFor } from './rates.js';"),
  );
  s.call(
    null,
    s.edit(
      'src/tax/calculator.ts',
      '    return getRate(region, line.category);',
      '    return rateFor(region, line.category);',
    ),
  );
  s.call(say(text.RERUN_TAX), s.test(['test/tax']));
  s.say(text.NEEDS_DATE);
  s.call(null, s.read('test/tax/calculator.test.ts'));
  s.call(
    say(text.THREAD_DATE),
    s.edit(
      'src/tax/calculator.ts',
      "import type { LineItem } from '../invoice/lineItem.js';",
      "import type { IsoDate } from '../dates.js';\nimport type { LineItem } from '../invoice/lineItem.js';",
    ),
  );
  s.call(
    null,
    s.edit(
      'src/tax/calculator.ts',
      '  rateOf(line: LineItem, region: string): number {\n    const forced = this.overrides.get(region);\n    if (forced !== undefined) return forced;\n    return rateFor(region, line.category);\n  }\n\n  taxFor(line: LineItem, region: string): Money {\n    return line.net().multiply(this.rateOf(line, region)).round();\n  }',
      '  rateOf(line: LineItem, region: string, on: IsoDate): number {\n    const forced = this.overrides.get(region);\n    if (forced !== undefined) return forced;\n    return rateFor(region, line.category, on);\n  }\n\n  /** Tax of one line at the rate in force on `on` (the invoice date). */\n  taxFor(line: LineItem, region: string, on: IsoDate): Money {\n    return line.net().multiply(this.rateOf(line, region, on)).round();\n  }',
    ),
  );
  s.call(null, s.test(['test/tax']));
  s.call(say(text.NOW_INVOICE), s.test(['test/invoice']));
  s.call(null, s.read('src/invoice/invoice.ts'));
  s.call(
    say(text.PASS_ISSUE_DATE),
    s.edit(
      'src/invoice/invoice.ts',
      '      const rate = calculator.rateOf(line, this.region);\n      const tax = calculator.taxFor(line, this.region);',
      '      const rate = calculator.rateOf(line, this.region, this.issuedAt);\n      const tax = calculator.taxFor(line, this.region, this.issuedAt);',
    ),
  );
  s.call(null, s.test(['test/invoice', 'test/format']));
  s.call(say(text.ROUTES_TOO), s.read('src/api/routes/invoices.ts'));
  s.call(
    null,
    s.edit(
      'src/api/routes/invoices.ts',
      "import { getRate } from '../../tax/rates.js';",
      "import { rateFor, type TaxCategory } from '../../tax/rates.js';",
    ),
  );
  s.call(
    null,
    s.edit(
      'src/api/routes/invoices.ts',
      "  app.post<{ Body: { region: string; category?: string; amount: number } }>('/tax/preview', async (request) => {\n    const { region, category = 'standard', amount } = request.body;\n    const rate = getRate(region, category as never);",
      "  app.post<{ Body: { region: string; category?: string; amount: number; on?: string } }>('/tax/preview', async (request) => {\n    const { region, category = 'standard', amount, on = today(options.now()) } = request.body;\n    const rate = rateFor(region, category as TaxCategory, on);",
    ),
  );
  s.call(null, s.test(['test/api']));
  s.say(text.API_STATUS);

  // ---- 3. rounding
  s.call(say(text.LOOK_AT_MONEY), s.test(['test/money.test.ts']));
  s.call(null, s.read('src/money.ts'));
  s.call(null, s.run('git log -L "/round(): Money/,+4:src/money.ts" --oneline | head -40', text.roundingLog()));
  s.call(
    null,
    s.run(
      `node -e "for (const v of [0.125, 2.675, 1.005, 2.5, -0.125]) console.log(v, v.toFixed(2), v.toFixed(0), v * 100)"`,
      text.TOFIXED_PROBE,
    ),
  );
  s.say(text.ROUNDING_EXPLANATION);
  s.call(
    null,
    s.edit(
      'src/money.ts',
      '    // refactor(tax): toFixed already rounds, no need for the hand-written version\n    return new Money(Number(this.amount.toFixed(digits)), this.currency);',
      '    const factor = 10 ** digits;\n    const scaled = this.amount * factor;\n    const whole = Math.trunc(scaled);\n    // toFixed() rounds half up (and sees 2.675 as 2.67499...), so ties are resolved here, to the even neighbour\n    const minor = Math.abs(scaled - whole) === 0.5 ? (whole % 2 === 0 ? whole : whole + 1) : Math.round(scaled);\n    return new Money(minor / factor, this.currency);',
    ),
  );
  s.call(null, s.test(['test/money.test.ts']));
  s.say(text.TRUNC_MISTAKE);
  s.call(
    null,
    s.edit(
      'src/money.ts',
      '    const whole = Math.trunc(scaled);\n    // toFixed() rounds half up (and sees 2.675 as 2.67499...), so ties are resolved here, to the even neighbour\n    const minor = Math.abs(scaled - whole) === 0.5 ? (whole % 2 === 0 ? whole : whole + 1) : Math.round(scaled);',
      '    const floor = Math.floor(scaled);\n    // toFixed() rounds half up and works on the binary value (1.005 is 1.00499...), so ties are detected with a\n    // tolerance and resolved here, to the even neighbour; floor (not trunc) keeps negative amounts symmetric\n    const tie = Math.abs(scaled - floor - 0.5) < 1e-9;\n    const minor = tie ? (floor % 2 === 0 ? floor : floor + 1) : Math.round(scaled);',
    ),
  );
  s.call(null, s.test(['test/money.test.ts', 'test/invoice']));

  // ---- 4. finalize without await
  s.call(say(text.LOOK_AT_FINALIZE), s.read('test/invoice/finalize.test.ts'), s.read('src/invoice/repository.ts'));
  s.say(text.FINALIZE_EXPLANATION);
  s.call(
    null,
    s.edit(
      'src/invoice/invoice.ts',
      "    repo.save(record);\n    this.status = 'finalized';",
      "    await repo.save(record);\n    this.status = 'finalized';",
    ),
  );
  s.call(null, s.test(['test/invoice']));

  // ---- 5. receipt snapshots
  s.call(say(text.LOOK_AT_SNAPSHOTS), s.test(['test/format']));
  s.call(
    null,
    s.run(
      'git log -S "Tax (" --oneline -- src/format/receipt.ts',
      'b71e0a3 feat(receipt): label tax lines "Tax (VAT x%)" (#398)',
    ),
  );
  s.call(null, s.run('git show b71e0a3 --stat', text.receiptCommit()));
  s.say(text.ASK_ABOUT_SNAPSHOTS);
  s.user(text.SNAPSHOT_ANSWER);
  s.call(
    say(text.UPDATE_SNAPSHOTS),
    s.run('npx vitest run -u test/format', () => {
      const snap = 'test/format/__snapshots__/receipt.test.ts.snap';
      repo.write(snap, text.updatedSnapshot(repo.read(snap)));
      return text.snapshotUpdateOutput(s.clock());
    }),
  );
  s.call(null, s.gitDiff(['test/format/__snapshots__/receipt.test.ts.snap']));

  // ---- 6. the overdue time bomb
  s.call(say(text.LOOK_AT_OVERDUE), s.read('test/api/invoices.test.ts'));
  s.call(
    null,
    s.run('date -u +%F && git log -1 --format=%cd --date=short -- test/api/invoices.test.ts', '2024-06-20\n2024-06-14'),
  );
  s.say(text.TIME_BOMB);
  s.call(
    null,
    s.edit(
      'test/api/invoices.test.ts',
      '    const server = await buildServer({ repository });',
      "    const server = await buildServer({ repository, now: () => new Date('2024-06-14T12:00:00Z') });",
    ),
  );
  s.call(null, s.test(['test/api']));
  s.call(say(text.FULL_RUN), s.test());
  s.say(text.summaryAfterGreen());

  // ---- 7. CI time zones
  s.user(text.ciDatesRequest());
  s.call(
    'Let me get the full log of the failing job first.',
    s.run(
      'gh run list --branch main --limit 3 && gh run view 9581327706 --log-failed',
      () =>
        `STATUS  TITLE                                       WORKFLOW  BRANCH  EVENT  ID          ELAPSED  AGE\nX       Merge branch 'tax-refactor'             ci        main    push   9581327706  1m52s    about 40 minutes ago\n✓       test(api): overdue invoices             ci        main    push   9566019942  1m47s    about 6 days ago\n✓       chore(ci): run the suite in two time z  ci        main    push   9549880013  1m49s    about 7 days ago\n\n${ciFailedLog(repo, LA, rng, new Date('2024-06-20T08:31:12Z'))}`,
    ),
  );
  s.call(maybe(text.LOOK_AT_DATES), s.read('src/dates.ts'), s.read('test/dates.test.ts'));
  s.call(null, s.test(['test/dates.test.ts', 'test/invoice/totals.test.ts'], LA, 'TZ=America/Los_Angeles '));
  s.call(null, s.run(text.TZ_PROBE_COMMAND, text.TZ_PROBE_OUTPUT));
  s.say(text.TZ_EXPLANATION);
  s.call(
    null,
    s.edit('src/dates.ts', '  date.setDate(date.getDate() + days);', '  date.setUTCDate(date.getUTCDate() + days);'),
  );
  s.call(
    null,
    s.edit(
      'src/dates.ts',
      '  const day = parseIsoDate(value).getDay();',
      '  const day = parseIsoDate(value).getUTCDay();',
    ),
  );
  s.call(
    null,
    s.edit(
      'src/dates.ts',
      'export function parseIsoDate(value: string): Date {',
      "/** 'YYYY-MM-DD' parses as UTC midnight: only ever use the UTC accessors (getUTCDate, ...) on the result. */\nexport function parseIsoDate(value: string): Date {",
    ),
  );
  s.call(
    null,
    s.grep('\\.get\\(Date\\|Day\\|Month\\|FullYear\\|Hours\\)()\\|\\.set\\(Date\\|Month\\|FullYear\\|Hours\\)(', [
      'src',
    ]),
  );
  s.call(say(text.RERUN_ZONES), s.test(['test/dates.test.ts', 'test/invoice'], LA, 'TZ=America/Los_Angeles '));
  s.call(null, s.run(text.ZONE_LOOP_COMMAND, text.zoneLoopOutput()));
  s.call(null, s.test());
  s.say(text.TZ_SUMMARY);

  // ---- 8. lint
  s.user(text.LINT_REQUEST);
  s.call(
    null,
    s.run('npm run lint', () => lintOutput(repo)),
  );
  s.say(text.LINT_PLAN);
  for (const spec of REPORTS) lintFixes(s, spec);
  s.call(
    say(text.LINT_AGAIN),
    s.run('npm run lint', () => lintOutput(repo)),
  );

  // ---- 9. typecheck
  s.call(
    null,
    s.run('npm run typecheck', () => tscOutput(repo)),
  );
  s.call(null, s.read('scripts/backfill-tax.ts'));
  s.call(
    say(text.BACKFILL_FIX),
    s.edit(
      'scripts/backfill-tax.ts',
      "import { getRate } from '../src/tax/rates.js';",
      "import { rateFor } from '../src/tax/rates.js';",
    ),
  );
  s.call(
    null,
    s.edit(
      'scripts/backfill-tax.ts',
      "  const rate = getRate(values.region, 'standard');",
      "  const rate = rateFor(values.region, 'standard', record.issuedAt);",
    ),
  );
  for (const spec of REPORTS.filter((r) => r.uncheckedIndex)) {
    const path = `src/reports/${spec.name}.ts`;
    s.call(
      rng.chance(0.5) ? `Now the possibly-undefined \`first\` in ${path}.` : null,
      s.read(path, [repo.lineOf(path, 'export function format') - 1, repo.lineOf(path, "join('\\n')") + 1]),
    );
    s.call(
      null,
      s.edit(
        path,
        '  const first = body[0];\n  const note = body.length === 1 ? `single group: ${first[0]}` : `${body.length} groups`;',
        "  const note = body.length === 1 ? `single group: ${body[0]?.[0] ?? ''}` : `${body.length} groups`;",
      ),
    );
  }
  s.call(
    null,
    s.run('npm run typecheck', () => tscOutput(repo)),
  );
  s.call(
    null,
    s.run('npm run lint && npm test', () => `${lintOutput(repo)}\n${testOutputOf(s)}`),
  );
  s.say(text.CHECKS_SUMMARY);

  // ---- 10. regression test for the rounding report
  s.user(text.REGRESSION_REQUEST);
  s.call(null, s.read('test/money.test.ts', [60, 80]));
  s.call(null, s.edit('test/money.test.ts', text.REGRESSION_ANCHOR, text.REGRESSION_TESTS));
  s.call(null, s.test(['test/money.test.ts']));
  s.call(
    null,
    s.run(
      'git stash push src/money.ts && npx vitest run test/money.test.ts -t regressions; git stash pop',
      text.regressionAgainstOldCode(s.clock()),
    ),
  );
  s.say(text.REGRESSION_DONE);

  // ---- 11. Node 18
  s.user(text.node18Request());
  s.call(
    'Getting the full log of one of the failing Node 18 jobs.',
    s.run('gh run view 9582210474 --job 26424871531 --log-failed', () =>
      ciFailedLog(repo, NODE18, rng, new Date('2024-06-20T10:02:44Z')),
    ),
  );
  s.call(
    null,
    s.grep('toSorted\\|toReversed\\|toSpliced\\|findLast\\|Object.groupBy\\|Array.fromAsync', [
      'src',
      'scripts',
      'test',
    ]),
  );
  s.call(null, s.run('node --version && docker --version', 'v20.12.2\nDocker version 26.1.1, build 4cf5afa'));
  s.call(
    say(text.DOCKER_RUN),
    s.test(['test/reports'], NODE18, 'docker run --rm -v "$PWD":/app -w /app node:18-slim '),
  );
  for (const spec of REPORTS.filter((r) => r.toSorted)) {
    const path = `src/reports/${spec.name}.ts`;
    s.call(null, s.edit(path, '  return rows.toSorted((a, b) =>', '  return [...rows].sort((a, b) =>'));
  }
  s.call(null, s.test(['test/reports'], NODE18, 'docker run --rm -v "$PWD":/app -w /app node:18-slim '));
  s.call(say(text.NODE18_GUARD), s.read('package.json', [1, 12]));
  s.call(null, s.edit('package.json', '"node": ">=18.18"', '"node": ">=18.18 <19 || >=20"'));
  s.say(text.NODE18_SUMMARY);

  // ---- 12. performance
  s.user(text.PERF_REQUEST);
  s.call(null, s.run('npm run bench', text.benchBefore(rng)));
  s.call(null, s.read('src/invoice/invoice.ts', [60, 80]));
  s.say(text.PERF_EXPLANATION);
  s.call(
    null,
    s.edit(
      'src/invoice/invoice.ts',
      '      // running net, so that a partially built invoice can be previewed line by line\n      net = sum(\n        this.lines.filter((l) => l.position <= line.position).map((l) => l.net()),\n        this.currency,\n      );',
      '      net = net.add(line.net());',
    ),
  );
  s.call(null, s.run('npm run bench', text.benchAfter(rng)));
  s.call(null, s.test(['test/invoice', 'test/format', 'test/api']));
  s.say(text.PERF_SUMMARY);

  // ---- 12b. review pass
  s.user(text.AUDIT_REQUEST);
  s.call(
    'I will start with greps for the patterns, then read the modules one by one.',
    s.grep('toFixed\\|Math.round\\|\\* 100\\|/ 100', ['src']),
    s.grep('new Date(\\|Date.now\\|getDate\\|getDay\\|getMonth\\|getHours', ['src']),
  );
  s.call(null, s.grep('repository\\.\\|repo\\.', ['src', 'scripts']));
  for (const path of [
    'src/index.ts',
    'src/currency.ts',
    'src/money.ts',
    'src/dates.ts',
    'src/invoice/lineItem.ts',
    'src/invoice/invoice.ts',
    'src/invoice/repository.ts',
    'src/tax/rates.ts',
    'src/tax/calculator.ts',
    'src/format/receipt.ts',
    'src/api/server.ts',
    'src/api/routes/invoices.ts',
  ]) {
    s.call(rng.chance(0.25) ? `Reading \`${path}\`.` : null, s.read(path));
  }
  for (const spec of REPORTS) s.call(null, s.read(`src/reports/${spec.name}.ts`));
  s.call(
    'The API tests load the JSON fixture; checking it for amounts that exercise the rounding and discount paths.',
    s.read('test/fixtures/invoices.json'),
  );
  s.call(
    null,
    s.run(
      `jq -c '[.invoices[].lines[] | select(.discountPercent != null)] | group_by(.discountPercent) | map({discount: .[0].discountPercent, lines: length})' test/fixtures/invoices.json`,
      () => {
        const data = JSON.parse(repo.read('test/fixtures/invoices.json')) as {
          invoices: { lines: { discountPercent?: number }[] }[];
        };
        const counts = new Map<number, number>();
        for (const inv of data.invoices)
          for (const l of inv.lines)
            if (l.discountPercent !== undefined)
              counts.set(l.discountPercent, (counts.get(l.discountPercent) ?? 0) + 1);
        return JSON.stringify(
          [...counts.entries()].sort(([a], [b]) => a - b).map(([discount, lines]) => ({ discount, lines })),
        );
      },
    ),
  );
  s.call(
    null,
    s.run(
      `node -e "console.log(1 - 0.07, 3 * 33.35, (3 * 33.35) * (1 - 0.07), Math.round(3 * 33.35 * 0.93 * 100) / 100)"`,
      '0.9299999999999999 100.05000000000001 93.04650000000001 93.05',
    ),
  );
  s.say(text.AUDIT_FINDINGS);
  s.user(text.AUDIT_GO);
  s.call(null, s.edit('src/invoice/lineItem.ts', text.DISCOUNT_OLD, text.DISCOUNT_NEW));
  s.call(null, s.edit('test/invoice/totals.test.ts', text.DISCOUNT_TEST_ANCHOR, text.DISCOUNT_TEST));
  s.call(null, s.test(['test/invoice', 'test/format', 'test/api']));
  s.call(null, s.test());
  s.say(
    'Discounts are now computed on the rounded gross in cents, with a test for the 3 × 33.35 at 7 % case (93.05). The full suite passes.',
  );

  // ---- 13. diff and PR description
  s.user(text.DIFF_REQUEST);
  s.call(
    null,
    s.run('git diff --stat', () => repo.diffStat()),
  );
  s.call(null, s.gitDiff());
  s.say(text.PR_DESCRIPTION);

  // ---- 14. rebase
  s.user(text.REBASE_REQUEST);
  s.call(
    null,
    s.run(
      'git add -A && git commit -q -m "fix: repair the test suite after the tax refactor" && git log --oneline -3',
      text.commitOutput(),
    ),
  );
  s.call(
    null,
    s.run('git fetch origin && git rebase origin/main', () => text.startRebase(repo)),
  );
  s.call(null, s.read('src/tax/calculator.ts'));
  s.call(null, s.read('src/format/percent.ts'));
  s.say(text.CONFLICT_EXPLANATION);
  s.call(null, s.edit('src/tax/calculator.ts', text.CONFLICT_BLOCK, text.CONFLICT_RESOLVED));
  s.call(null, s.run('git add src/tax/calculator.ts && GIT_EDITOR=true git rebase --continue', text.REBASE_CONTINUE));
  s.call(
    null,
    s.run('npm run typecheck && npm test', () => `${tscOutput(repo)}\n${testOutputOf(s)}`),
  );
  s.call(null, s.run('git log --oneline -6', text.logAfterRebase()));
  s.say(text.REBASE_DONE);

  // ---- 15. docs for the report functions
  s.user(text.DOCS_REQUEST);
  for (const spec of REPORTS) docComments(s, spec);
  s.call(
    null,
    s.run('npm run lint && npm run typecheck', () => `${lintOutput(repo)}\n${tscOutput(repo)}`),
  );
  s.say(text.DOCS_DONE);

  // ---- 16. real expectations in the report tests
  s.user(text.REPORT_TESTS_REQUEST);
  s.call(null, s.read('test/reports/fixtures.ts'));
  s.call(
    'There is also a JSON fixture used by the API tests; let me see whether it is usable for the reports.',
    s.read('test/fixtures/invoices.json'),
  );
  s.say(
    'The JSON fixture is big and mixes currencies and regions, which makes exact expectations hard to read. I will use a small inline fixture per report instead, built with the existing `record()` helper: five invoices covering two invoices of one customer, a paid one, a draft and a credit note.',
  );
  for (const spec of REPORTS) realReportTest(s, spec);
  s.call(null, s.test(['test/reports']));
  s.say(text.REPORT_TESTS_DONE);

  // ---- 16b. currency guard
  s.user(text.CURRENCY_REQUEST);
  for (const spec of REPORTS) {
    const path = `src/reports/${spec.name}.ts`;
    const testPath = `test/reports/${spec.name}.test.ts`;
    const guard = text.currencyGuard(spec.name);
    const test = text.currencyTest(spec.name);
    s.call(rng.chance(0.3) ? `\`${spec.name}\` next.` : null, s.edit(path, guard.old, guard.replacement));
    s.call(null, s.edit(testPath, test.old, test.replacement));
    s.call(
      null,
      s.run(`npx vitest run ${testPath}`, () =>
        reportTestRun(spec, null, s.clock(), s.rng)
          .replace('(3 tests)', '(4 tests)')
          .replace(/3 passed \(3\)/, '4 passed (4)'),
      ),
    );
  }
  s.call(
    null,
    s.run('npm run lint && npm run typecheck', () => `${lintOutput(repo)}\n${tscOutput(repo)}`),
  );
  s.say(text.CURRENCY_DONE);

  // ---- 17. CSV export
  s.user(text.CSV_REQUEST);
  s.call(null, s.read('src/reports/taxSummary.ts'));
  s.call(null, s.edit('src/reports/taxSummary.ts', text.CSV_ANCHOR, text.CSV_FIRST_TRY));
  s.call(null, s.write('test/reports/taxSummaryCsv.test.ts', text.CSV_TEST));
  s.call(null, s.test(['test/reports/taxSummaryCsv.test.ts']));
  s.say(text.CSV_BUG);
  s.call(null, s.edit('src/reports/taxSummary.ts', text.CSV_BUGGY_LINE, text.CSV_FIXED_LINE));
  s.call(null, s.test(['test/reports']));
  s.call(
    null,
    s.run('npm run lint && npm run typecheck', () => `${lintOutput(repo)}\n${tscOutput(repo)}`),
  );
  s.say(text.CSV_DONE);

  // ---- 18. coverage
  s.user(text.COVERAGE_REQUEST);
  s.call(null, s.run('npx vitest run --coverage', text.coverageBefore(s.clock())));
  s.call(null, s.read('test/dates.test.ts'));
  s.call(null, s.edit('test/dates.test.ts', text.COVERAGE_ANCHOR, text.COVERAGE_TESTS));
  s.call(null, s.run('npx vitest run --coverage', text.coverageAfter(s.clock())));
  s.say(text.COVERAGE_DONE);

  // ---- 19. the backfill script
  s.user(text.BACKFILL_REQUEST);
  s.call(null, s.run('npm run backfill:tax -- --region DE --dry-run', text.BACKFILL_OUTPUT));
  s.say(text.BACKFILL_FINDING);
  s.user(text.BACKFILL_ISSUE_REQUEST);
  s.call(null, s.run(text.GH_ISSUE_COMMAND, 'https://github.com/acme-finance/ledgerline/issues/447'));
  s.say(text.FINAL_WRAP_UP);
  s.user(text.LOCAL_CI_REQUEST);
  s.call(
    null,
    s.run('npm run lint && npm run typecheck', () => `${lintOutput(repo)}\n${tscOutput(repo)}`),
  );
  for (const tz of ['UTC', 'America/Los_Angeles']) {
    s.call(
      null,
      s.run(
        `TZ=${tz} npx vitest run --reporter=verbose`,
        () => vitestOutput(repo, { tz, node: 20 }, rng, { verbose: true, clock: s.clock() }).output,
      ),
    );
  }
  s.call(
    null,
    s.run(
      'docker run --rm -v "$PWD":/app -w /app node:18-slim npx vitest run --reporter=verbose',
      () => vitestOutput(repo, NODE18, rng, { verbose: true, clock: s.clock() }).output,
    ),
  );
  s.call(null, s.read('CHANGELOG.md', [1, 60]));
  s.call(null, s.edit('CHANGELOG.md', 'semantic versioning.\n', `semantic versioning.\n\n${text.CHANGELOG_ENTRY}\n`));
  s.say(text.LOCAL_CI_DONE);
  s.user(text.THANKS);
  s.call(
    null,
    s.run(
      'git add -A && git commit -q --amend --no-edit && git show --stat --oneline HEAD | tail -1 && git log --oneline -2',
      text.AMEND_OUTPUT,
    ),
  );
  s.say(text.GOODBYE);
  return s.messages;
}

function testOutputOf(s: AgentSession): string {
  const spec = s.test();
  return spec.output();
}

function lintFixes(s: AgentSession, spec: ReportSpec): void {
  const path = `src/reports/${spec.name}.ts`;
  if (!spec.unusedImport && !spec.anyParam && !spec.letNeverReassigned) return;
  const rng = s.rng;
  s.call(rng.chance(0.4) ? `Next: \`${path}\`.` : null, s.read(path));
  if (spec.unusedImport) s.call(null, s.edit(path, "import { Money } from '../money.js';\n", ''));
  if (spec.anyParam)
    s.call(null, s.edit(path, 'function include(record: any,', 'function include(record: InvoiceRecord,'));
  if (spec.letNeverReassigned)
    s.call(null, s.edit(path, `  let rows: ${spec.row}[] = [];`, `  const rows: ${spec.row}[] = [];`));
  if (rng.chance(0.5))
    s.call(
      null,
      s.run(`npx eslint ${path}`, () => text.eslintFileOutput(s.repo, path)),
    );
}

function docComments(s: AgentSession, spec: ReportSpec): void {
  const path = `src/reports/${spec.name}.ts`;
  s.call(
    s.rng.chance(0.4) ? `Checking what \`${spec.name}\` produces on the JSON fixture before describing it.` : null,
    s.run(
      `npx tsx -e "import { ${spec.name}, format${spec.row}s } from './${path}'; import data from './test/fixtures/invoices.json' with { type: 'json' }; console.log(format${spec.row}s(${spec.name}(data.invoices.map((i) => ({ ...i, dueOn: i.issuedAt, finalizedAt: null, totals: { net: '100.00', tax: '19.00', gross: '119.00' } })), { asOf: '2024-06-20', currency: 'EUR' })))"`,
      () => renderedReport(s, spec),
    ),
  );
  s.call(s.rng.chance(0.3) ? `Documenting \`${spec.name}\`.` : null, s.read(path));
  s.call(null, s.edit(path, `export function ${spec.name}(`, `${text.reportDoc(spec)}\nexport function ${spec.name}(`));
  s.call(
    null,
    s.edit(
      path,
      `export function format${spec.row}s(`,
      `/** Renders ${spec.name} rows as an aligned text table (for the CLI and e-mails). */\nexport function format${spec.row}s(`,
    ),
  );
}

function realReportTest(s: AgentSession, spec: ReportSpec): void {
  const testPath = `test/reports/${spec.name}.test.ts`;
  s.call(null, s.read(testPath), s.read(`src/reports/${spec.name}.ts`, [1, 60]));
  const content = realReportTestContent(spec, s.rng);
  s.call(null, s.write(testPath, content.first));
  s.call(
    null,
    s.run(`npx vitest run ${testPath}`, () =>
      reportTestRun(spec, content.firstFails ? content : null, s.clock(), s.rng),
    ),
  );
  if (content.firstFails) {
    s.say(reportTestMistake(spec));
    s.call(null, s.edit(testPath, content.wrong, content.right));
    s.call(
      null,
      s.run(`npx vitest run ${testPath}`, () => reportTestRun(spec, null, s.clock(), s.rng)),
    );
  }
}

/** What a report's formatter prints for the JSON fixture (every invoice counted at 100.00 net). */
function renderedReport(s: AgentSession, spec: ReportSpec): string {
  const data = JSON.parse(s.repo.read('test/fixtures/invoices.json')) as {
    invoices: { customerId: string; issuedAt: string; status: string; currency: string }[];
  };
  const groups = new Map<string, number>();
  for (const inv of data.invoices) {
    if (inv.currency !== 'EUR' || inv.status === 'void' || inv.status === 'draft') continue;
    const key =
      spec.groupBy === 'customer' ? inv.customerId : spec.groupBy === 'rate' ? '0.190' : inv.issuedAt.slice(0, 7);
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const header = ['key', ...spec.fields.map(([f]) => f)];
  const rows = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, n]) => [
      key,
      ...spec.fields.map(([f, t]) =>
        t === 'number'
          ? String(f === 'share' ? (n / data.invoices.length).toFixed(4) : n)
          : t === 'IsoDate'
            ? '2024-06-20'
            : (n * 119).toFixed(2),
      ),
    ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  return [line(header), ...rows.map(line), '', `${rows.length} groups`].join('\n');
}
