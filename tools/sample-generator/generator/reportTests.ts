// "Real" expectations for the report tests of the coding sample: the report modules' semantics evaluated here on a
// small fixture, so the rewritten tests state the exact rows (and the agent's first guess can be wrong).
import type { Rng } from './random.js';
import type { ReportSpec } from './repoFiles.js';

interface Rec {
  number: string;
  customerId: string;
  issuedAt: string;
  dueOn: string;
  status: string;
  net: string;
  gross: string;
}

const RECORDS: Rec[] = [
  {
    number: 'INV-7001',
    customerId: 'cust-1',
    issuedAt: '2024-04-03',
    dueOn: '2024-05-03',
    status: 'finalized',
    net: '100.00',
    gross: '119.00',
  },
  {
    number: 'INV-7002',
    customerId: 'cust-7',
    issuedAt: '2024-04-20',
    dueOn: '2024-05-20',
    status: 'paid',
    net: '250.00',
    gross: '297.50',
  },
  {
    number: 'INV-7003',
    customerId: 'cust-1',
    issuedAt: '2024-05-02',
    dueOn: '2024-06-01',
    status: 'finalized',
    net: '40.00',
    gross: '47.60',
  },
  {
    number: 'INV-7004',
    customerId: 'cust-9',
    issuedAt: '2024-05-15',
    dueOn: '2024-06-14',
    status: 'draft',
    net: '10.00',
    gross: '11.90',
  },
  {
    number: 'INV-7005',
    customerId: 'cust-7',
    issuedAt: '2024-05-20',
    dueOn: '2024-06-19',
    status: 'finalized',
    net: '-50.00',
    gross: '-59.50',
  },
];
const AS_OF = '2024-06-14';

const days = (from: string, to: string) => Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000);
const taxOf = (r: Rec) => (Number(r.gross) - Number(r.net)).toFixed(2);
const sumOf = (group: Rec[], field: 'net' | 'tax' | 'gross') =>
  (group.reduce((acc, r) => acc + Math.round(Number(field === 'tax' ? taxOf(r) : r[field]) * 100), 0) / 100).toFixed(2);

function bucketOf(d: number): string {
  if (d <= 0) return 'current';
  if (d <= 30) return '1-30';
  if (d <= 60) return '31-60';
  if (d <= 90) return '61-90';
  return '90+';
}

function weekOf(value: string): string {
  const date = new Date(value);
  const day = (date.getUTCDay() + 6) % 7;
  date.setUTCDate(date.getUTCDate() - day + 3);
  const firstThursday = new Date(Date.UTC(date.getUTCFullYear(), 0, 4));
  const week = 1 + Math.round((date.getTime() - firstThursday.getTime()) / 86_400_000 / 7);
  return `${date.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

function include(spec: ReportSpec, r: Rec, withDrafts: boolean): boolean {
  if (spec.name === 'overdueList') return r.status === 'finalized' && days(r.dueOn, AS_OF) > 0;
  if (spec.name === 'creditNotes') return r.status !== 'void' && Number(r.gross) < 0;
  if (spec.name === 'cashFlowForecast' || spec.name === 'agingReport')
    return r.status === 'finalized' || (withDrafts && r.status === 'draft');
  return r.status !== 'void' && (withDrafts || r.status !== 'draft');
}

function keyOf(spec: ReportSpec, r: Rec): string {
  switch (spec.groupBy) {
    case 'customer':
      return r.customerId;
    case 'month':
      return r.issuedAt.slice(0, 7);
    case 'bucket':
      return bucketOf(days(r.dueOn, AS_OF));
    case 'rate':
      return r.net === '0.00' ? '0' : (Number(taxOf(r)) / Number(r.net)).toFixed(3);
    case 'week':
      return weekOf(r.dueOn);
  }
}

type Row = Record<string, string | number>;

export function evaluateReport(spec: ReportSpec, withDrafts = false): Row[] {
  const groups = new Map<string, Rec[]>();
  for (const r of RECORDS) {
    if (!include(spec, r, withDrafts)) continue;
    const key = keyOf(spec, r);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const total = [...groups.values()].flat().reduce((acc, r) => acc + Number(r.gross), 0);
  const rows: Row[] = [];
  for (const [key, group] of groups) {
    const row: Row = { key };
    for (const [field] of spec.fields) {
      const values: Record<string, () => string | number> = {
        invoices: () => group.length,
        notes: () => group.length,
        openAmount: () => sumOf(group, 'gross'),
        gross: () => sumOf(group, 'gross'),
        net: () => sumOf(group, 'net'),
        tax: () => sumOf(group, 'tax'),
        expected: () => sumOf(group, 'gross'),
        credited: () => sumOf(group, 'gross'),
        largest: () =>
          group
            .map((r) => Number(r.gross))
            .reduce((a, b) => Math.min(a, b), 0)
            .toFixed(2),
        oldestDueOn: () => group.map((r) => r.dueOn).sort()[0] ?? AS_OF,
        firstDueOn: () => group.map((r) => r.dueOn).sort()[0] ?? AS_OF,
        lastIssuedAt: () =>
          group
            .map((r) => r.issuedAt)
            .sort()
            .at(-1) ?? AS_OF,
        maxDaysOverdue: () => Math.max(0, ...group.map((r) => days(r.dueOn, AS_OF))),
        share: () => (total === 0 ? 0 : Number(sumOf(group, 'gross')) / total),
      };
      row[field] = values[field]?.() ?? 0;
    }
    rows.push(row);
  }
  const field = spec.sortField;
  const type = spec.fields.find(([f]) => f === field)?.[1];
  const value = (r: Row) => r[field] ?? '';
  rows.sort((a, b) => {
    const cmp =
      type === 'number' || (type === 'string' && field !== 'key')
        ? Number(value(a)) - Number(value(b))
        : String(value(a)).localeCompare(String(value(b)));
    return spec.descending ? -cmp : cmp;
  });
  return rows;
}

function literal(rows: Row[], indent: string): string {
  if (rows.length === 0) return '[]';
  const items = rows.map(
    (r) =>
      `${indent}  { ${Object.entries(r)
        .map(([k, v]) => `${k}: ${typeof v === 'number' ? String(v) : `'${v}'`}`)
        .join(', ')} },`,
  );
  return `[\n${items.join('\n')}\n${indent}]`;
}

const DESCRIBE: Record<ReportSpec['groupBy'], string> = {
  customer: 'groups by customer',
  month: 'groups by month of issue',
  bucket: 'puts open invoices in aging buckets',
  rate: 'groups by effective tax rate',
  week: 'groups expected payments by ISO week of the due date',
};

export interface RealReportTest {
  first: string;
  firstFails: boolean;
  wrong: string;
  right: string;
  wrongRows: Row[];
  rightRows: Row[];
}

export function realReportTestContent(spec: ReportSpec, rng: Rng): RealReportTest {
  const rightRows = evaluateReport(spec);
  const wrongRows = evaluateReport(spec, true);
  const canBeWrong = JSON.stringify(rightRows) !== JSON.stringify(wrongRows);
  const firstFails = canBeWrong && rng.chance(0.6);
  const right = literal(rightRows, '    ');
  const wrong = literal(wrongRows, '    ');
  const records = RECORDS.map(
    (r) =>
      `  record({ number: '${r.number}', customerId: '${r.customerId}', issuedAt: '${r.issuedAt}', dueOn: '${r.dueOn}', status: '${r.status}', net: '${r.net}', gross: '${r.gross}' }),`,
  );
  const body = (rows: string, count: number) =>
    [
      "import { describe, expect, it } from 'vitest';",
      `import { format${spec.row}s, ${spec.name} } from '../../src/reports/${spec.name}.js';`,
      "import { record } from './fixtures.js';",
      '',
      `const asOf = '${AS_OF}';`,
      'const records = [',
      ...records,
      '];',
      '',
      `describe('${spec.name}', () => {`,
      `  it('${DESCRIBE[spec.groupBy]}', () => {`,
      `    expect(${spec.name}(records, { asOf })).toEqual(${rows});`,
      '  });',
      '',
      "  it('ignores invoices in other currencies', () => {",
      `    expect(${spec.name}(records, { asOf, currency: 'USD' })).toEqual([]);`,
      '  });',
      '',
      "  it('formats one table line per row', () => {",
      `    const text = format${spec.row}s(${spec.name}(records, { asOf }));`,
      `    expect(text.split('\\n')).toHaveLength(${count + 3});`,
      '  });',
      '});',
      '',
    ].join('\n');
  return {
    first: firstFails ? body(wrong, rightRows.length) : body(right, rightRows.length),
    firstFails,
    wrong: `toEqual(${wrong})`,
    right: `toEqual(${right})`,
    wrongRows,
    rightRows,
  };
}

export function reportTestRun(spec: ReportSpec, failing: RealReportTest | null, clock: string, rng: Rng): string {
  const file = `test/reports/${spec.name}.test.ts`;
  const head = ['', ' RUN  v1.6.0 /home/dev/ledgerline', ''];
  const tail = (failed: number) => [
    ` Test Files  ${failed ? '1 failed' : '1 passed'} (1)`,
    `      Tests  ${failed ? `${failed} failed | ${3 - failed} passed` : '3 passed'} (3)`,
    `   Start at  ${clock}`,
    `   Duration  ${(0.5 + rng.next()).toFixed(2)}s (transform ${rng.int(60, 200)}ms, setup 0ms, collect ${rng.int(90, 300)}ms, tests ${rng.int(3, 12)}ms, environment 0ms, prepare ${rng.int(80, 160)}ms)`,
    '',
  ];
  if (!failing) return [...head, ` ✓ ${file}  (3 tests) ${rng.int(3, 12)}ms`, '', ...tail(0)].join('\n');
  const title = `${file} > ${spec.name} > ${DESCRIBE[spec.groupBy]}`;
  const diff: string[] = [];
  const show = (rows: Row[]) => rows.map((r) => JSON.stringify(r));
  const expected = show(failing.wrongRows);
  const received = show(failing.rightRows);
  for (const line of expected) if (!received.includes(line)) diff.push(`-   ${line}`);
  for (const line of received) if (!expected.includes(line)) diff.push(`+   ${line}`);
  return [
    ...head,
    ` ❯ ${file}  (3 tests | 1 failed) ${rng.int(4, 15)}ms`,
    `   ❯ ${title}`,
    `     → expected [ …(${failing.rightRows.length}) ] to deeply equal [ …(${failing.wrongRows.length}) ]`,
    '',
    '⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯',
    '',
    ` FAIL  ${title}`,
    `AssertionError: expected [ …(${failing.rightRows.length}) ] to deeply equal [ …(${failing.wrongRows.length}) ]`,
    '',
    '- Expected',
    '+ Received',
    '',
    '  Array [',
    ...diff,
    '  ]',
    '',
    ` ❯ ${file}:17:${spec.name.length + 30}`,
    '',
    '⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯',
    '',
    ...tail(1),
    '[exit code 1]',
  ].join('\n');
}

export function reportTestMistake(spec: ReportSpec): string {
  const what =
    spec.name === 'agingReport' || spec.name === 'cashFlowForecast'
      ? 'only finalized invoices are receivables; I counted the draft INV-7004 as well'
      : 'drafts are excluded from the report (only issued invoices count); my expectation included the draft INV-7004';
  return `My expectation was wrong, not the code: ${what}. Fixing the test.`;
}
