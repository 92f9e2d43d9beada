// What `npx vitest run` prints for the fictional repository in its current state: the failures are derived from
// the files' content (which bug is still there), so the output changes as the agent edits, as in a real session.
import type { Rng } from './random.js';
import type { VirtualRepo } from './repo.js';
import { REPORTS } from './repoFiles.js';

export interface RunEnv {
  /** TZ of the run (the user's laptop is on UTC; CI also runs America/Los_Angeles). */
  tz: string;
  node: 18 | 20;
}

interface TestCase {
  file: string;
  names: string[];
  line: number;
}

interface Failure {
  error: string;
  diff?: [string, string];
  /** Stack frames above the test line, as `Fn file:line:col`. */
  frames?: string[];
  /** Text of the test file line the failure points at. */
  at: string;
  col?: number;
}

const RULE = '⎯';

/** Test cases of a test file, from its describe/it nesting. */
export function collectTests(repo: VirtualRepo, file: string): TestCase[] {
  const tests: TestCase[] = [];
  const stack: { indent: number; name: string }[] = [];
  repo
    .read(file)
    .split('\n')
    .forEach((text, i) => {
      const m = /^(\s*)(describe|it)\('([^']+)'/.exec(text);
      if (!m) return;
      const indent = (m[1] ?? '').length;
      while (stack.length && (stack.at(-1)?.indent ?? 0) >= indent) stack.pop();
      if (m[2] === 'describe') stack.push({ indent, name: m[3] ?? '' });
      else tests.push({ file, names: [...stack.map((s) => s.name), m[3] ?? ''], line: i + 1 });
    });
  return tests;
}

export function testFiles(repo: VirtualRepo): string[] {
  return repo.paths().filter((p) => p.startsWith('test/') && p.endsWith('.test.ts'));
}

const has = (repo: VirtualRepo, path: string, text: string) => repo.read(path).includes(text);

function frame(repo: VirtualRepo, fn: string, path: string, needle: string, col = 12): string {
  return `${fn} ${path}:${repo.lineOf(path, needle)}:${col}`;
}

/** The failures of the current state, keyed by `file > describe > it`. */
export function diagnose(repo: VirtualRepo, env: RunEnv): { failures: Map<string, Failure>; unhandled: string[] } {
  const failures = new Map<string, Failure>();
  const unhandled: string[] = [];
  const key = (file: string, ...names: string[]) => [file, ...names].join(' > ');
  const calc = 'src/tax/calculator.ts';
  const inv = 'src/invoice/invoice.ts';

  // --- tax: the rename getRate → rateFor(region, category, on)
  let rateError: { error: string; frames: string[] } | null = null;
  if (has(repo, calc, 'getRate')) {
    rateError = {
      error: 'TypeError: (0 , __vi_import_0__.getRate) is not a function',
      frames: [
        frame(repo, 'TaxCalculator.rateOf', calc, 'return getRate('),
        frame(repo, 'TaxCalculator.taxFor', calc, 'this.rateOf(line', 41),
      ],
    };
  } else if (has(repo, calc, 'rateFor(region, line.category)')) {
    rateError = {
      error: 'UnknownRateError: no standard rate for DE in force on undefined',
      frames: [
        frame(repo, 'rateFor', 'src/tax/rates.ts', 'throw new UnknownRateError', 20),
        frame(repo, 'TaxCalculator.rateOf', calc, 'return rateFor('),
        frame(repo, 'TaxCalculator.taxFor', calc, 'this.rateOf(line', 41),
      ],
    };
  }
  const invoiceRateError =
    rateError ??
    (has(repo, inv, 'calculator.rateOf(line, this.region)')
      ? {
          error: 'UnknownRateError: no standard rate for DE in force on undefined',
          frames: [
            frame(repo, 'rateFor', 'src/tax/rates.ts', 'throw new UnknownRateError', 20),
            frame(repo, 'TaxCalculator.rateOf', calc, 'return rateFor('),
          ],
        }
      : null);
  const calcFile = 'test/tax/calculator.test.ts';
  if (rateError) {
    const tests: [string, string][] = [
      ['computes German standard VAT', "expect(calculator.taxFor(line(100), 'DE'"],
      ['computes German reduced VAT', "expect(calculator.taxFor(line(100, 'reduced')"],
      ['uses the temporary 16% rate of the second half of 2020', "'2020-09-01'"],
      ['computes French standard VAT', "expect(calculator.taxFor(line(50), 'FR'"],
      ['rounds per line', 'line(0.99'],
    ];
    for (const [name, at] of tests) failures.set(key(calcFile, 'TaxCalculator', name), { ...rateError, at, col: 29 });
    const got = rateError.error.replace(/^\w+: /, '').replace('DE', 'XX');
    failures.set(key(calcFile, 'TaxCalculator', 'fails clearly for unknown regions'), {
      error: `AssertionError: expected [Function] to throw error including 'no standard rate for XX in force on 2024-05-01' but got '${got}'`,
      diff: ['no standard rate for XX in force on 2024-05-01', got],
      at: "calculator.taxFor(line(1), 'XX'",
      col: 64,
    });
  }
  const totalsFile = 'test/invoice/totals.test.ts';
  const finalizeFile = 'test/invoice/finalize.test.ts';
  const receiptFile = 'test/format/receipt.test.ts';
  if (invoiceRateError) {
    const totalsFrame = frame(repo, 'Invoice.totals', inv, 'calculator.rateOf(line', 25);
    const withTotals = { error: invoiceRateError.error, frames: [...invoiceRateError.frames.slice(0, 2), totalsFrame] };
    failures.set(key(totalsFile, 'Invoice.totals', 'sums lines and taxes per rate'), {
      ...withTotals,
      at: 'const totals = invoice.totals();',
      col: 28,
    });
    failures.set(key(totalsFile, 'Invoice.totals', 'applies line discounts before tax'), {
      ...withTotals,
      at: 'expect(invoice.totals().net',
      col: 20,
    });
    const viaRecord = {
      error: withTotals.error,
      frames: [
        ...withTotals.frames,
        frame(repo, 'Invoice.toRecord', inv, 'const totals = this.totals();', 25),
        frame(repo, 'Invoice.finalize', inv, "this.toRecord('finalized'", 25),
      ],
    };
    failures.set(key(finalizeFile, 'Invoice.finalize', 'persists the finalized invoice'), {
      ...viaRecord,
      at: 'await invoice.finalize(repo, new Date',
      col: 19,
    });
    failures.set(key(finalizeFile, 'Invoice.finalize', 'leaves the invoice in draft when the repository rejects'), {
      error: `AssertionError: expected error to be instance of RepositoryError`,
      diff: ['RepositoryError', invoiceRateError.error.split(':')[0] ?? 'Error'],
      at: 'rejects.toThrow(RepositoryError)',
      col: 42,
    });
    failures.set(key(finalizeFile, 'Invoice.finalize', 'refuses to finalize twice'), {
      ...viaRecord,
      at: 'await invoice.finalize(repo);',
      col: 19,
    });
    const viaReceipt = {
      error: withTotals.error,
      frames: [
        ...withTotals.frames,
        frame(repo, 'renderReceipt', 'src/format/receipt.ts', 'const totals = invoice.totals(calculator);', 26),
      ],
    };
    failures.set(key(receiptFile, 'receipt', 'renders a German invoice'), {
      ...viaReceipt,
      at: 'expect(renderReceipt(invoice)).toMatchSnapshot();',
      col: 12,
    });
    failures.set(key(receiptFile, 'receipt', 'renders discounts and a footer'), {
      ...viaReceipt,
      at: 'expect(renderReceipt(invoice, { footer',
      col: 12,
    });
  } else {
    if (has(repo, inv, '    repo.save(record);')) {
      failures.set(key(finalizeFile, 'Invoice.finalize', 'persists the finalized invoice'), {
        error: "AssertionError: expected undefined to match object { status: 'finalized', …(2) }",
        diff: [
          'Object {\n    "finalizedAt": "2024-05-02T09:30:00.000Z",\n    "status": "finalized",\n    "totals": Object {\n      "gross": "1520.45",\n      "net": "1286.40",\n      "tax": "234.05",\n    },\n  }',
          'undefined',
        ],
        at: "expect(await repo.get('INV-1042')).toMatchObject({",
        col: 42,
      });
      failures.set(key(finalizeFile, 'Invoice.finalize', 'leaves the invoice in draft when the repository rejects'), {
        error: 'AssertionError: promise resolved "undefined" instead of rejecting',
        diff: ['Error {\n    "message": "rejected promise",\n  }', 'undefined'],
        at: 'rejects.toThrow(RepositoryError)',
        col: 42,
      });
      unhandled.push(
        [
          `${RULE.repeat(6)} Unhandled Rejection ${RULE.repeat(6)}`,
          'RepositoryError: invoice INV-2001 is locked by another writer',
          ` ❯ InMemoryInvoiceRepository.save src/invoice/repository.ts:${repo.lineOf('src/invoice/repository.ts', 'throw new RepositoryError')}:13`,
          ` ❯ Invoice.finalize src/invoice/invoice.ts:${repo.lineOf(inv, '    repo.save(record);')}:10`,
          ` ❯ test/invoice/finalize.test.ts:${repo.lineOf(finalizeFile, 'rejects.toThrow(RepositoryError)')}:26`,
          '',
          'This error originated in "test/invoice/finalize.test.ts" test file. It doesn\'t mean the error was thrown inside the file itself, but while it was running.',
          'The latest test that might\'ve caused the error is "leaves the invoice in draft when the repository rejects". It might mean one of the following:',
          '- The error was thrown, while Vitest was running this test.',
          '- If the error occurred after the test had been completed, this was the last documented test before it was thrown.',
        ].join('\n'),
      );
    }
    const snap = 'test/format/__snapshots__/receipt.test.ts.snap';
    if (has(repo, snap, '  VAT 19%') && has(repo, 'src/format/receipt.ts', '`  Tax (${')) {
      failures.set(key(receiptFile, 'receipt', 'renders a German invoice'), {
        error: 'Error: Snapshot `receipt > renders a German invoice 1` mismatched',
        diff: [
          '@@ -6,9 +6,9 @@\n  ------------------------------------------------\n  Net                                  1286.40 EUR\n-   VAT 19%                             228.00 EUR\n-   VAT 7%                                6.05 EUR\n+   Tax (VAT 19%)                       228.00 EUR\n+   Tax (VAT 7%)                          6.05 EUR\n  Total                                1520.45 EUR',
          '',
        ],
        at: 'expect(renderReceipt(invoice)).toMatchSnapshot();',
        col: 36,
      });
      failures.set(key(receiptFile, 'receipt', 'renders discounts and a footer'), {
        error: 'Error: Snapshot `receipt > renders discounts and a footer 1` mismatched',
        diff: [
          '@@ -7,7 +7,7 @@\n  ------------------------------------------------\n  Net                                  1020.00 EUR\n-   VAT 19%                             193.80 EUR\n+   Tax (VAT 19%)                       193.80 EUR\n  Total                                1213.80 EUR',
          '',
        ],
        at: 'expect(renderReceipt(invoice, { footer',
        col: 84,
      });
    }
  }

  // --- money rounding
  const money = 'src/money.ts';
  const moneyFile = 'test/money.test.ts';
  const round = (name: string, at: string, expected: string, received: string) =>
    failures.set(key(moneyFile, 'Money', 'round', name), {
      error: `AssertionError: expected ${received} to be ${expected} // Object.is equality`,
      diff: [expected, received],
      at,
      col: 51,
    });
  if (has(repo, money, 'Number(this.amount.toFixed(digits))')) {
    round('rounds half to even on minor units', "Money.of(0.125, 'EUR')", '0.12', '0.13');
    round('rounds half to even for currencies without minor units', "Money.of(2.5, 'JPY')", '2', '3');
    round('rounds negative amounts symmetrically', "Money.of(-0.125, 'EUR')", '-0.12', '-0.13');
  } else if (has(repo, money, 'Math.trunc(scaled)')) {
    round('rounds negative amounts symmetrically', "Money.of(-3.5, 'JPY')", '-4', '-2');
  }

  // --- dates in a time zone west of UTC
  const datesFile = 'test/dates.test.ts';
  if (env.tz !== 'UTC' && has(repo, 'src/dates.ts', 'date.setDate(date.getDate() + days)')) {
    const d = (name: string, at: string, expected: string, received: string) =>
      failures.set(key(datesFile, 'dates', name), {
        error: `AssertionError: expected ${received} to be ${expected} // Object.is equality`,
        diff: [expected, received],
        at,
        col: 38,
      });
    d('adds days across the spring DST change', "addDays('2024-03-01', 30)", "'2024-03-31'", "'2024-03-30'");
    d('adds business days, skipping weekends', "addBusinessDays('2024-03-08', 1)", "'2024-03-11'", "'2024-03-09'");
    failures.set(key(totalsFile, 'Invoice.totals', 'computes the due date from the payment terms'), {
      error: "AssertionError: expected '2024-03-14' to be '2024-03-15' // Object.is equality",
      diff: ["'2024-03-15'", "'2024-03-14'"],
      at: 'expect(invoice.dueOn)',
      col: 27,
    });
  }
  if (env.tz !== 'UTC' && has(repo, 'src/dates.ts', 'parseIsoDate(value).getDay()')) {
    failures.set(key(datesFile, 'dates', 'knows weekends'), {
      error: 'AssertionError: expected false to be true // Object.is equality',
      diff: ['true', 'false'],
      at: "isWeekend('2024-03-02')",
      col: 37,
    });
  }

  // --- API
  const apiFile = 'test/api/invoices.test.ts';
  if (rateError) {
    failures.set(key(apiFile, 'invoices API', 'creates an invoice'), {
      error: 'AssertionError: expected 500 to be 201 // Object.is equality',
      diff: ['201', '500'],
      at: 'expect(res.statusCode).toBe(201);',
      col: 28,
    });
  }
  if (has(repo, 'src/api/routes/invoices.ts', 'getRate')) {
    failures.set(key(apiFile, 'invoices API', 'previews the tax of an amount'), {
      error: 'AssertionError: expected 500 to be 200 // Object.is equality',
      diff: ['200', '500'],
      at: "url: '/tax/preview'",
      col: 28,
    });
  }
  if (!has(repo, apiFile, 'now: () =>')) {
    failures.set(key(apiFile, 'invoices API', 'reports finalized invoices past their due date as overdue'), {
      error:
        "AssertionError: expected { number: 'INV-5002', …(10) } to match object { overdue: true, overdueDays: 14 }",
      diff: [
        'Object {\n    "overdue": true,\n    "overdueDays": 14,\n  }',
        'Object {\n    "overdue": true,\n    "overdueDays": 20,\n  }',
      ],
      at: 'overdueDays: 14',
      col: 24,
    });
  }

  // --- the CSV export of the tax summary, first version (LF instead of CRLF)
  const csvTest = 'test/reports/taxSummaryCsv.test.ts';
  if (repo.has(csvTest) && has(repo, 'src/reports/taxSummary.ts', ".map((cells) => cells.join(';')).join('\\n')")) {
    failures.set(key(csvTest, 'taxSummaryCsv', 'writes a header and one row per rate, with decimal commas and CRLF'), {
      error:
        "AssertionError: expected 'Steuersatz;Rechnungen;Netto;Steuer\\n19…' to be 'Steuersatz;Rechnungen;Netto;Steuer\\r\\n…' // Object.is equality",
      diff: [
        'Steuersatz;Rechnungen;Netto;Steuer\\r\\n19,0 %;1;1000,00;190,00\\r\\n7,0 %;1;200,50;14,04\\r\\n',
        'Steuersatz;Rechnungen;Netto;Steuer\\n19,0 %;1;1000,00;190,00\\n7,0 %;1;200,50;14,04',
      ],
      at: 'expect(taxSummaryCsv(rows))',
      col: 34,
    });
    failures.set(key(csvTest, 'taxSummaryCsv', 'writes only the header when there is nothing to report'), {
      error:
        "AssertionError: expected 'Steuersatz;Rechnungen;Netto;Steuer' to be 'Steuersatz;Rechnungen;Netto;Steuer\\r\\n' // Object.is equality",
      diff: ["'Steuersatz;Rechnungen;Netto;Steuer\\r\\n'", "'Steuersatz;Rechnungen;Netto;Steuer'"],
      at: 'expect(taxSummaryCsv([]))',
      col: 32,
    });
  }

  // --- reports on Node 18 (no Array.prototype.toSorted)
  if (env.node === 18) {
    for (const spec of REPORTS) {
      const path = `src/reports/${spec.name}.ts`;
      if (!has(repo, path, 'rows.toSorted(')) continue;
      const file = `test/reports/${spec.name}.test.ts`;
      const err = {
        error: 'TypeError: rows.toSorted is not a function',
        frames: [frame(repo, spec.name, path, 'rows.toSorted(', 15)],
      };
      failures.set(key(file, spec.name, 'groups the invoices'), {
        ...err,
        at: `const rows = ${spec.name}(records`,
        col: 18,
      });
      failures.set(key(file, spec.name, 'filters by currency'), { ...err, at: "currency: 'USD'", col: 12 });
      failures.set(key(file, spec.name, 'formats a table'), { ...err, at: `const text = format`, col: 40 });
    }
  }
  return { failures, unhandled };
}

function codeFrame(repo: VirtualRepo, file: string, needle: string, col: number): string {
  const line = repo.lineOf(file, needle);
  const lines = repo.read(file).split('\n');
  const out: string[] = [` ❯ ${file}:${line}:${col}`];
  for (let i = Math.max(1, line - 2); i <= Math.min(lines.length, line + 2); i++) {
    out.push(`    ${String(i).padStart(3)}| ${lines[i - 1]}`);
    if (i === line) out.push(`       | ${' '.repeat(Math.max(0, col - 1))}^`);
  }
  return out.join('\n');
}

export interface RunOptions {
  /** Only test files starting with one of these. */
  filter?: string[];
  /** The npm script banner (`npm test`) or none (`npx vitest run`). */
  viaNpm?: boolean;
  /** `--reporter=verbose`: every test on its own line. */
  verbose?: boolean;
  clock: string;
}

/** The console output of a vitest run, and whether it passed. */
export function vitestOutput(
  repo: VirtualRepo,
  env: RunEnv,
  rng: Rng,
  options: RunOptions,
): { output: string; passed: boolean } {
  const { failures, unhandled } = diagnose(repo, env);
  const files = testFiles(repo).filter((f) => !options.filter || options.filter.some((p) => f.startsWith(p)));
  const out: string[] = [];
  if (options.viaNpm) out.push('', '> ledgerline@2.3.0 test', '> vitest run', '');
  out.push('', ` RUN  v1.6.0 ${repo.root}`, '');
  let failedTests = 0;
  let passedTests = 0;
  let failedFiles = 0;
  const details: { title: string; failure: Failure; file: string }[] = [];
  for (const file of files) {
    const tests = collectTests(repo, file);
    const failing = tests.filter((t) => failures.has([file, ...t.names].join(' > ')));
    failedTests += failing.length;
    passedTests += tests.length - failing.length;
    const ms = rng.int(3, 40) + (file.includes('api') ? rng.int(60, 140) : 0);
    if (options.verbose) {
      for (const t of tests) {
        const bad = failures.has([file, ...t.names].join(' > '));
        out.push(` ${bad ? '×' : '✓'} ${[file, ...t.names].join(' > ')} ${rng.int(0, 9)}ms`);
      }
    }
    if (failing.length === 0) {
      if (!options.verbose) out.push(` ✓ ${file}  (${tests.length} tests) ${ms}ms`);
      continue;
    }
    failedFiles++;
    out.push(` ❯ ${file}  (${tests.length} tests | ${failing.length} failed) ${ms}ms`);
    for (const t of failing) {
      const title = [file, ...t.names].join(' > ');
      const failure = failures.get(title) as Failure;
      out.push(`   ❯ ${title}`, `     → ${failure.error.replace(/^\w*Error: /, '')}`);
      details.push({ title, failure, file });
    }
  }
  if (details.length) {
    out.push('', `${RULE.repeat(7)} Failed Tests ${details.length} ${RULE.repeat(7)}`, '');
    // identical errors are reported once, under all the tests they failed
    const groups: { titles: string[]; failure: Failure; file: string }[] = [];
    for (const d of details) {
      const same = groups.find(
        (g) =>
          g.file === d.file &&
          g.failure.error === d.failure.error &&
          !d.failure.diff &&
          !g.failure.diff &&
          g.failure.at === d.failure.at,
      );
      if (same) same.titles.push(d.title);
      else groups.push({ titles: [d.title], failure: d.failure, file: d.file });
    }
    groups.forEach((g, i) => {
      for (const title of g.titles) out.push(` FAIL  ${title}`);
      out.push(g.failure.error);
      if (g.failure.diff) {
        const [expected, received] = g.failure.diff;
        if (expected.startsWith('@@')) out.push('', '- Expected', '+ Received', '', expected);
        else out.push('', '- Expected', '+ Received', '', `- ${expected}`, `+ ${received}`);
      }
      out.push('');
      for (const f of g.failure.frames ?? []) out.push(` ❯ ${f}`);
      out.push(codeFrame(repo, g.file, g.failure.at, g.failure.col ?? 10));
      out.push('', `${RULE.repeat(50)}[${i + 1}/${groups.length}]${RULE}`, '');
    });
  }
  if (unhandled.length && files.some((f) => f.includes('invoice/finalize'))) {
    out.push(
      `${RULE.repeat(6)} Unhandled Errors ${RULE.repeat(6)}`,
      '',
      `Vitest caught ${unhandled.length} unhandled error during the test run.`,
      'This might cause false positive tests. Resolve unhandled errors to make sure your tests are not affected.',
      '',
      ...unhandled,
      RULE.repeat(56),
      '',
    );
  }
  const total = failedTests + passedTests;
  out.push(
    ` Test Files  ${failedFiles ? `${failedFiles} failed | ` : ''}${files.length - failedFiles} passed (${files.length})`,
    `      Tests  ${failedTests ? `${failedTests} failed | ` : ''}${passedTests} passed (${total})`,
  );
  if (unhandled.length && files.some((f) => f.includes('invoice/finalize')))
    out.push(`     Errors  ${unhandled.length} error`);
  const duration = (0.6 + files.length * 0.18 + rng.next()).toFixed(2);
  out.push(
    `   Start at  ${options.clock}`,
    `   Duration  ${duration}s (transform ${rng.int(200, 700)}ms, setup 0ms, collect ${rng.int(900, 2400)}ms, tests ${rng.int(150, 600)}ms, environment ${rng.int(1, 5)}ms, prepare ${rng.int(600, 1500)}ms)`,
    '',
  );
  const passed = failedTests === 0 && unhandled.length === 0;
  if (!passed && options.viaNpm)
    out.push(
      'npm ERR! Lifecycle script `test` failed with error:',
      'npm ERR! Error: command failed',
      'npm ERR!   in workspace: ledgerline',
      'npm ERR!   at location: /home/dev/ledgerline',
    );
  return { output: out.join('\n'), passed };
}
