// biome-ignore-all lint/suspicious/noTemplateCurlyInString: this file writes TypeScript source of the fictional repository as strings
// Initial content of the fictional repository `ledgerline`: hand-written files under ledgerline/ (stored as .txt so
// no tool treats them as project sources) plus generated ones (the VAT table, the report modules and their tests).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { changelog, invoiceFixtures } from './fixtures.js';
import type { Rng } from './random.js';

const TEMPLATE_DIR = fileURLToPath(new URL('./ledgerline/', import.meta.url));

function readTemplates(dir: string, out: Record<string, string>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) readTemplates(full, out);
    else if (entry.name.endsWith('.txt'))
      out[relative(TEMPLATE_DIR, full).replace(/\.txt$/, '')] = readFileSync(full, 'utf8');
  }
}

interface RateHistory {
  region: string;
  standard: [string, number][];
  reduced: [string, number][];
  superReduced?: [string, number][];
}

const HISTORY: RateHistory[] = [
  {
    region: 'AT',
    standard: [['2016-01-01', 0.2]],
    reduced: [
      ['2016-01-01', 0.1],
      ['2020-07-01', 0.05],
      ['2022-01-01', 0.1],
    ],
  },
  { region: 'BE', standard: [['1996-01-01', 0.21]], reduced: [['1996-01-01', 0.06]] },
  {
    region: 'DE',
    standard: [
      ['2007-01-01', 0.19],
      ['2020-07-01', 0.16],
      ['2021-01-01', 0.19],
    ],
    reduced: [
      ['1983-07-01', 0.07],
      ['2020-07-01', 0.05],
      ['2021-01-01', 0.07],
    ],
  },
  { region: 'DK', standard: [['1992-01-01', 0.25]], reduced: [['1992-01-01', 0]] },
  {
    region: 'ES',
    standard: [['2012-09-01', 0.21]],
    reduced: [['2012-09-01', 0.1]],
    superReduced: [['1995-01-01', 0.04]],
  },
  {
    region: 'FI',
    standard: [
      ['2013-01-01', 0.24],
      ['2024-09-01', 0.255],
    ],
    reduced: [['2013-01-01', 0.14]],
  },
  {
    region: 'FR',
    standard: [['2014-01-01', 0.2]],
    reduced: [['2014-01-01', 0.1]],
    superReduced: [['2012-01-01', 0.055]],
  },
  {
    region: 'IE',
    standard: [
      ['2012-01-01', 0.23],
      ['2020-09-01', 0.21],
      ['2021-03-01', 0.23],
    ],
    reduced: [['2003-01-01', 0.135]],
  },
  {
    region: 'IT',
    standard: [['2013-10-01', 0.22]],
    reduced: [['1995-01-01', 0.1]],
    superReduced: [['1989-01-01', 0.04]],
  },
  {
    region: 'LU',
    standard: [
      ['2015-01-01', 0.17],
      ['2023-01-01', 0.16],
      ['2024-01-01', 0.17],
    ],
    reduced: [['2015-01-01', 0.08]],
  },
  { region: 'NL', standard: [['2012-10-01', 0.21]], reduced: [['2019-01-01', 0.09]] },
  { region: 'PL', standard: [['2011-01-01', 0.23]], reduced: [['2011-01-01', 0.08]] },
  {
    region: 'PT',
    standard: [['2011-01-01', 0.23]],
    reduced: [['2011-01-01', 0.13]],
    superReduced: [['2011-01-01', 0.06]],
  },
  { region: 'SE', standard: [['1990-07-01', 0.25]], reduced: [['1996-01-01', 0.12]] },
];

function ratesTable(): string {
  const rows: string[] = [];
  for (const h of HISTORY) {
    const categories: [string, [string, number][] | undefined][] = [
      ['standard', h.standard],
      ['reduced', h.reduced],
      ['super-reduced', h.superReduced],
    ];
    for (const [category, history] of categories) {
      if (!history) continue;
      history.forEach(([from, rate], i) => {
        const to = history[i + 1]?.[0];
        rows.push(
          `  { region: '${h.region}', category: '${category}', rate: ${rate}, validFrom: '${from}', validTo: ${to ? `'${to}'` : 'null'} },`,
        );
      });
    }
    rows.push(`  { region: '${h.region}', category: 'zero', rate: 0, validFrom: '1970-01-01', validTo: null },`);
  }
  return rows.join('\n');
}

/** A report module's shape; the generated code differs in names, fields, grouping, sorting and planted issues. */
export interface ReportSpec {
  name: string;
  row: string;
  title: string;
  groupBy: 'customer' | 'month' | 'bucket' | 'rate' | 'week';
  fields: [string, string][];
  sortField: string;
  descending: boolean;
  /** Planted lint issues (eslint), each an exact text of the module. */
  unusedImport: boolean;
  anyParam: boolean;
  letNeverReassigned: boolean;
  /** Uses Array.prototype.toSorted (Node 20+), which breaks the Node 18 CI job. */
  toSorted: boolean;
  /** An unchecked index access (TS2532 under noUncheckedIndexedAccess). */
  uncheckedIndex: boolean;
}

export const REPORTS: ReportSpec[] = [
  {
    name: 'agingReport',
    row: 'AgingBucket',
    title: 'Receivables aging in 30-day buckets',
    groupBy: 'bucket',
    fields: [
      ['invoices', 'number'],
      ['openAmount', 'string'],
      ['oldestDueOn', 'IsoDate'],
    ],
    sortField: 'openAmount',
    descending: true,
    unusedImport: true,
    anyParam: true,
    letNeverReassigned: false,
    toSorted: true,
    uncheckedIndex: false,
  },
  {
    name: 'revenueByMonth',
    row: 'MonthlyRevenue',
    title: 'Net revenue per calendar month',
    groupBy: 'month',
    fields: [
      ['invoices', 'number'],
      ['net', 'string'],
      ['tax', 'string'],
    ],
    sortField: 'key',
    descending: false,
    unusedImport: false,
    anyParam: false,
    letNeverReassigned: true,
    toSorted: true,
    uncheckedIndex: true,
  },
  {
    name: 'customerStatement',
    row: 'StatementLine',
    title: 'Statement of account for one customer',
    groupBy: 'customer',
    fields: [
      ['invoices', 'number'],
      ['gross', 'string'],
      ['lastIssuedAt', 'IsoDate'],
    ],
    sortField: 'gross',
    descending: true,
    unusedImport: true,
    anyParam: false,
    letNeverReassigned: true,
    toSorted: false,
    uncheckedIndex: false,
  },
  {
    name: 'taxSummary',
    row: 'TaxLine',
    title: 'Tax collected per rate, for the VAT return',
    groupBy: 'rate',
    fields: [
      ['invoices', 'number'],
      ['tax', 'string'],
      ['net', 'string'],
    ],
    sortField: 'key',
    descending: true,
    unusedImport: false,
    anyParam: true,
    letNeverReassigned: false,
    toSorted: false,
    uncheckedIndex: true,
  },
  {
    name: 'overdueList',
    row: 'OverdueInvoice',
    title: 'Finalized invoices past their due date',
    groupBy: 'customer',
    fields: [
      ['invoices', 'number'],
      ['gross', 'string'],
      ['maxDaysOverdue', 'number'],
    ],
    sortField: 'maxDaysOverdue',
    descending: true,
    unusedImport: true,
    anyParam: true,
    letNeverReassigned: true,
    toSorted: true,
    uncheckedIndex: false,
  },
  {
    name: 'creditNotes',
    row: 'CreditNoteLine',
    title: 'Credit notes (negative invoices) per month',
    groupBy: 'month',
    fields: [
      ['notes', 'number'],
      ['credited', 'string'],
      ['largest', 'string'],
    ],
    sortField: 'key',
    descending: false,
    unusedImport: false,
    anyParam: false,
    letNeverReassigned: false,
    toSorted: false,
    uncheckedIndex: false,
  },
  {
    name: 'cashFlowForecast',
    row: 'ForecastWeek',
    title: 'Expected incoming payments per week, from due dates',
    groupBy: 'week',
    fields: [
      ['invoices', 'number'],
      ['expected', 'string'],
      ['firstDueOn', 'IsoDate'],
    ],
    sortField: 'key',
    descending: false,
    unusedImport: true,
    anyParam: false,
    letNeverReassigned: true,
    toSorted: true,
    uncheckedIndex: false,
  },
  {
    name: 'topCustomers',
    row: 'CustomerRank',
    title: 'Customers ranked by gross revenue',
    groupBy: 'customer',
    fields: [
      ['invoices', 'number'],
      ['gross', 'string'],
      ['share', 'number'],
    ],
    sortField: 'gross',
    descending: true,
    unusedImport: false,
    anyParam: true,
    letNeverReassigned: false,
    toSorted: false,
    uncheckedIndex: true,
  },
];

const GROUP_KEY: Record<ReportSpec['groupBy'], string> = {
  customer: 'record.customerId',
  month: 'record.issuedAt.slice(0, 7)',
  bucket: 'bucketOf(daysBetween(record.dueOn, options.asOf))',
  rate: "record.totals.net === '0.00' ? '0' : (Number(record.totals.tax) / Number(record.totals.net)).toFixed(3)",
  week: 'weekOf(record.dueOn)',
};

const FIELD_VALUE: Record<string, string> = {
  invoices: 'group.length',
  notes: 'group.length',
  openAmount: "sumOf(group, 'gross')",
  gross: "sumOf(group, 'gross')",
  net: "sumOf(group, 'net')",
  tax: "sumOf(group, 'tax')",
  expected: "sumOf(group, 'gross')",
  credited: "sumOf(group, 'gross')",
  largest: 'group.map((r) => Number(r.totals.gross)).reduce((a, b) => Math.min(a, b), 0).toFixed(2)',
  oldestDueOn: 'group.map((r) => r.dueOn).sort()[0] ?? options.asOf',
  firstDueOn: 'group.map((r) => r.dueOn).sort()[0] ?? options.asOf',
  lastIssuedAt: 'group.map((r) => r.issuedAt).sort().at(-1) ?? options.asOf',
  maxDaysOverdue: 'Math.max(0, ...group.map((r) => daysBetween(r.dueOn, options.asOf)))',
  share: "total === 0 ? 0 : Number(sumOf(group, 'gross')) / total",
};

function reportModule(spec: ReportSpec): string {
  const fields = spec.fields.map(([f, t]) => `  ${f}: ${t};`).join('\n');
  const values = spec.fields.map(([f]) => `      ${f}: ${FIELD_VALUE[f] ?? '0'},`).join('\n');
  const rowsDecl = spec.letNeverReassigned ? 'let' : 'const';
  const sortA = spec.sortField === 'key' ? 'a.key' : `a.${spec.sortField}`;
  const sortB = spec.sortField === 'key' ? 'b.key' : `b.${spec.sortField}`;
  const numeric = spec.fields.find(([f]) => f === spec.sortField)?.[1];
  const cmp =
    numeric === 'number'
      ? spec.descending
        ? `${sortB} - ${sortA}`
        : `${sortA} - ${sortB}`
      : numeric === 'string' && spec.sortField !== 'key'
        ? spec.descending
          ? `Number(${sortB}) - Number(${sortA})`
          : `Number(${sortA}) - Number(${sortB})`
        : spec.descending
          ? `${sortB}.localeCompare(${sortA})`
          : `${sortA}.localeCompare(${sortB})`;
  const sorted = spec.toSorted ? `return rows.toSorted((a, b) => ${cmp});` : `return [...rows].sort((a, b) => ${cmp});`;
  const filter =
    spec.name === 'overdueList'
      ? "record.status === 'finalized' && daysBetween(record.dueOn, options.asOf) > 0"
      : spec.name === 'creditNotes'
        ? "record.status !== 'void' && Number(record.totals.gross) < 0"
        : spec.name === 'cashFlowForecast' || spec.name === 'agingReport'
          ? "record.status === 'finalized'"
          : "record.status !== 'void' && record.status !== 'draft'";
  const helpers: string[] = [];
  if (spec.groupBy === 'bucket') {
    helpers.push(
      'export function bucketOf(daysOverdue: number): string {',
      "  if (daysOverdue <= 0) return 'current';",
      "  if (daysOverdue <= 30) return '1-30';",
      "  if (daysOverdue <= 60) return '31-60';",
      "  if (daysOverdue <= 90) return '61-90';",
      "  return '90+';",
      '}',
      '',
    );
  }
  if (spec.groupBy === 'week') {
    helpers.push(
      '/** ISO week of a date, as `2024-W18`. */',
      'export function weekOf(value: IsoDate): string {',
      '  const date = parseIsoDate(value);',
      '  const day = (date.getUTCDay() + 6) % 7;',
      '  date.setUTCDate(date.getUTCDate() - day + 3);',
      '  const firstThursday = new Date(Date.UTC(date.getUTCFullYear(), 0, 4));',
      '  const week = 1 + Math.round((date.getTime() - firstThursday.getTime()) / 86_400_000 / 7);',
      "  return `${date.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;",
      '}',
      '',
    );
  }
  const dateImports = ['daysBetween', 'type IsoDate'];
  if (spec.groupBy === 'week') dateImports.push('parseIsoDate');
  const lines: string[] = [
    `// ${spec.title}.`,
    `import { ${dateImports.join(', ')} } from '../dates.js';`,
    ...(spec.unusedImport ? ["import { Money } from '../money.js';"] : []),
    "import type { InvoiceRecord } from '../invoice/repository.js';",
    '',
    `export interface ${spec.row} {`,
    '  key: string;',
    fields,
    '}',
    '',
    `export interface ${spec.row}Options {`,
    '  /** The day the report is made for. */',
    '  asOf: IsoDate;',
    '  /** Only invoices of this currency (reports never mix currencies). */',
    '  currency?: string;',
    '}',
    '',
    ...helpers,
    `function sumOf(group: readonly InvoiceRecord[], field: 'net' | 'tax' | 'gross'): string {`,
    '  const cents = group.reduce((acc, r) => acc + Math.round(Number(r.totals[field]) * 100), 0);',
    '  return (cents / 100).toFixed(2);',
    '}',
    '',
    spec.anyParam
      ? 'function include(record: any, options: { asOf: IsoDate; currency?: string }): boolean {'
      : 'function include(record: InvoiceRecord, options: { asOf: IsoDate; currency?: string }): boolean {',
    '  if (options.currency && record.currency !== options.currency) return false;',
    `  return ${filter};`,
    '}',
    '',
    `export function ${spec.name}(records: readonly InvoiceRecord[], options: ${spec.row}Options): ${spec.row}[] {`,
    '  const groups = new Map<string, InvoiceRecord[]>();',
    '  for (const record of records) {',
    '    if (!include(record, options)) continue;',
    `    const key = ${GROUP_KEY[spec.groupBy].replace('options.asOf', 'options.asOf')};`,
    '    const group = groups.get(key);',
    '    if (group) group.push(record);',
    '    else groups.set(key, [record]);',
    '  }',
    ...(spec.fields.some(([f]) => f === 'share')
      ? ['  const total = [...groups.values()].flat().reduce((acc, r) => acc + Number(r.totals.gross), 0);']
      : []),
    `  ${rowsDecl} rows: ${spec.row}[] = [];`,
    '  for (const [key, group] of groups) {',
    '    rows.push({',
    '      key,',
    values,
    '    });',
    '  }',
    `  ${sorted}`,
    '}',
    '',
    `export function format${spec.row}s(rows: readonly ${spec.row}[]): string {`,
    `  const header = ['key', ${spec.fields.map(([f]) => `'${f}'`).join(', ')}];`,
    `  const body = rows.map((r) => [r.key, ${spec.fields.map(([f]) => `String(r.${f})`).join(', ')}]);`,
    '  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));',
    "  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');",
    ...(spec.uncheckedIndex
      ? [
          '  const first = body[0];',
          '  const note = body.length === 1 ? `single group: ${first[0]}` : `${body.length} groups`;',
        ]
      : ['  const note = `${body.length} groups`;']),
    "  return [line(header), ...body.map(line), '', note].join('\\n');",
    '}',
    '',
    ...extraHelpers(spec),
  ];
  return lines.join('\n');
}

/** The rest of a report module: totals, markdown and CSV renderers, row filters, comparison. */
function extraHelpers(spec: ReportSpec): string[] {
  const amountFields = spec.fields.filter(([, t]) => t === 'string').map(([f]) => f);
  const countField = spec.fields.find(([, t]) => t === 'number')?.[0] ?? 'invoices';
  const out: string[] = [
    `/** Sum of the amount columns over all rows (for the report footer). */`,
    `export function totalsOf${spec.row}s(rows: readonly ${spec.row}[]): { ${amountFields.map((f) => `${f}: string`).join('; ')}${amountFields.length ? '; ' : ''}rows: number } {`,
  ];
  for (const f of amountFields) {
    out.push(`  const ${f}Cents = rows.reduce((acc, r) => acc + Math.round(Number(r.${f}) * 100), 0);`);
  }
  out.push(
    `  return { ${amountFields.map((f) => `${f}: (${f}Cents / 100).toFixed(2)`).join(', ')}${amountFields.length ? ', ' : ''}rows: rows.length };`,
    '}',
    '',
  );
  out.push(
    `/** The rows as a GitHub-flavoured markdown table (used in the monthly e-mail and the admin UI). */`,
    `export function ${spec.name}Markdown(rows: readonly ${spec.row}[], title = '${spec.title}'): string {`,
    `  const header = ['key', ${spec.fields.map(([f]) => `'${f}'`).join(', ')}];`,
    "  const escape = (cell: string) => cell.replace(/\\|/g, '\\\\|');",
    "  const out = [`### ${title}`, '', `| ${header.join(' | ')} |`, `|${header.map(() => ' --- ').join('|')}|`];",
    '  for (const r of rows) {',
    `    const cells = [r.key, ${spec.fields.map(([f]) => `String(r.${f})`).join(', ')}].map(escape);`,
    "    out.push(`| ${cells.join(' | ')} |`);",
    '  }',
    "  if (rows.length === 0) out.push('', '_No data for this period._');",
    "  return out.join('\\n');",
    '}',
    '',
    `/** Rows whose ${countField} is at least \`min\` (the UI hides tiny groups by default). */`,
    `export function significant${spec.row}s(rows: readonly ${spec.row}[], min = 1): ${spec.row}[] {`,
    `  return rows.filter((r) => Number(r.${countField}) >= min);`,
    '}',
    '',
    `/** Compares two rows for stable ordering in exports: by key, then by the first amount column. */`,
    `export function compare${spec.row}s(a: ${spec.row}, b: ${spec.row}): number {`,
    '  if (a.key !== b.key) return a.key < b.key ? -1 : 1;',
    amountFields[0] ? `  return Number(a.${amountFields[0]}) - Number(b.${amountFields[0]});` : '  return 0;',
    '}',
    '',
    `/** Merges rows with the same key (reports of several ledgers, e.g. per subsidiary). */`,
    `export function merge${spec.row}s(...reports: readonly (readonly ${spec.row}[])[]): ${spec.row}[] {`,
    `  const byKey = new Map<string, ${spec.row}>();`,
    '  for (const rows of reports) {',
    '    for (const row of rows) {',
    '      const seen = byKey.get(row.key);',
    '      if (!seen) {',
    '        byKey.set(row.key, { ...row });',
    '        continue;',
    '      }',
  );
  for (const [f, t] of spec.fields) {
    if (t === 'string')
      out.push(
        `      seen.${f} = ((Math.round(Number(seen.${f}) * 100) + Math.round(Number(row.${f}) * 100)) / 100).toFixed(2);`,
      );
    else if (t === 'number' && f !== 'share' && f !== 'maxDaysOverdue') out.push(`      seen.${f} += row.${f};`);
    else if (t === 'number') out.push(`      seen.${f} = Math.max(seen.${f}, row.${f});`);
    else out.push(`      seen.${f} = seen.${f} < row.${f} ? seen.${f} : row.${f};`);
  }
  out.push('    }', '  }', `  return [...byKey.values()].sort(compare${spec.row}s);`, '}', '');
  return out;
}

function reportTest(spec: ReportSpec, rng: Rng): string {
  const customers = ['cust-1', 'cust-7', 'cust-9', 'cust-42'];
  const records: string[] = [];
  const n = rng.int(4, 7);
  for (let i = 0; i < n; i++) {
    const month = String(rng.int(1, 5)).padStart(2, '0');
    const day = String(rng.int(1, 28)).padStart(2, '0');
    const net = rng.int(10, 2000) + rng.int(0, 99) / 100;
    const sign = spec.name === 'creditNotes' && i % 2 === 0 ? -1 : 1;
    const gross = (sign * net * 1.19).toFixed(2);
    records.push(
      `  record({ number: 'INV-${6000 + i}', customerId: '${rng.pick(customers)}', issuedAt: '2024-${month}-${day}', dueOn: '2024-${String(Number(month) + 1).padStart(2, '0')}-${day}', status: '${rng.pick(['finalized', 'finalized', 'paid', 'draft'])}', net: '${(sign * net).toFixed(2)}', gross: '${gross}' }),`,
    );
  }
  return [
    "import { describe, expect, it } from 'vitest';",
    `import { ${spec.name}, format${spec.row}s } from '../../src/reports/${spec.name}.js';`,
    "import { record } from './fixtures.js';",
    '',
    'const records = [',
    ...records,
    '];',
    '',
    `describe('${spec.name}', () => {`,
    "  it('groups the invoices', () => {",
    `    const rows = ${spec.name}(records, { asOf: '2024-06-14' });`,
    '    expect(rows.length).toBeGreaterThanOrEqual(0);',
    '    expect(rows.every((r) => r.key.length > 0)).toBe(true);',
    '  });',
    '',
    "  it('filters by currency', () => {",
    `    expect(${spec.name}(records, { asOf: '2024-06-14', currency: 'USD' })).toEqual([]);`,
    '  });',
    '',
    "  it('formats a table', () => {",
    `    const text = format${spec.row}s(${spec.name}(records, { asOf: '2024-06-14' }));`,
    "    expect(text.split('\\n')[0]).toMatch(/^key/);",
    '  });',
    '});',
    '',
  ].join('\n');
}

const FIXTURES = `import type { InvoiceRecord } from '../../src/invoice/repository.js';

/** A stored invoice with sensible defaults for the report tests. */
export function record(
  fields: Partial<Omit<InvoiceRecord, 'totals'>> & { net?: string; tax?: string; gross?: string },
): InvoiceRecord {
  const net = fields.net ?? '100.00';
  const gross = fields.gross ?? (Number(net) * 1.19).toFixed(2);
  const tax = fields.tax ?? (Number(gross) - Number(net)).toFixed(2);
  return {
    number: fields.number ?? 'INV-0001',
    customerId: fields.customerId ?? 'cust-1',
    currency: fields.currency ?? 'EUR',
    issuedAt: fields.issuedAt ?? '2024-05-01',
    dueOn: fields.dueOn ?? '2024-05-31',
    status: fields.status ?? 'finalized',
    finalizedAt: fields.finalizedAt ?? null,
    lines: fields.lines ?? [],
    totals: { net, tax, gross },
  };
}
`;

export function initialRepoFiles(rng: Rng): Record<string, string> {
  const files: Record<string, string> = {};
  readTemplates(TEMPLATE_DIR, files);
  files['src/tax/rates.ts'] = (files['src/tax/rates.ts'] ?? '').replace('/*RATES*/', ratesTable());
  for (const spec of REPORTS) {
    files[`src/reports/${spec.name}.ts`] = reportModule(spec);
    files[`test/reports/${spec.name}.test.ts`] = reportTest(spec, rng);
  }
  files['test/reports/fixtures.ts'] = FIXTURES;
  files['test/fixtures/invoices.json'] = invoiceFixtures(rng);
  files['CHANGELOG.md'] = changelog(rng);
  return files;
}
