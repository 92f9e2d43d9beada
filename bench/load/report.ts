// The printed tables: one row per measure, with the goal beside the figure and whether it is met.
import { loadavg } from 'node:os';
import { CPU_GROUPS, type CpuReport } from './cpu.js';
import { int, ms, type Summary } from './stats.js';

export interface Row {
  measure: string;
  figure: string;
  /** The figure the issue measured before this work (its "today" table), when it has one. */
  before?: string;
  goal?: string;
  /** true: met, false: missed, undefined: no goal. */
  met?: boolean;
}

/** Prints the rows; `beforeTitle` names the column of the earlier figures (omitted when null). */
export function printTable(
  title: string,
  rows: readonly Row[],
  log: (line: string) => void,
  beforeTitle: string | null = null,
): void {
  const columns: { title: string; cell: (row: Row) => string }[] = [
    { title: 'measure', cell: (row) => row.measure },
    ...(beforeTitle ? [{ title: beforeTitle, cell: (row: Row) => row.before ?? '' }] : []),
    { title: 'this run', cell: (row) => row.figure },
    { title: 'goal', cell: (row) => row.goal ?? '—' },
    { title: '', cell: (row) => (row.met === undefined ? '' : row.met ? 'met' : 'MISSED') },
  ];
  const widths = columns.map((c) => Math.max(c.title.length, 6, ...rows.map((r) => c.cell(r).length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  log('');
  log(title);
  log(line(columns.map((c) => c.title)));
  log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) log(line(columns.map((c) => c.cell(row))));
}

export const latencies = (s: Summary, which: ('p50' | 'p95' | 'p99')[] = ['p50', 'p95', 'p99']) =>
  s.n === 0 ? '— (no samples)' : which.map((p) => ms(s[p])).join(' / ');

/** CPU seconds of the product's process (its `gateway + worker` threads) in a report. */
function productSeconds(report: CpuReport): number {
  let sum = 0;
  for (const [group, seconds] of report.groups) if (group.startsWith('gateway + worker')) sum += seconds;
  return sum;
}

export function cpuRows(report: CpuReport): Row[] {
  const share = (seconds: number) => `${((100 * seconds) / report.seconds).toFixed(0)} % of a core`;
  const rows: Row[] = [];
  const product = productSeconds(report);
  for (const group of [...CPU_GROUPS, 'rest of the machine' as const]) {
    const seconds = report.groups.get(group) ?? 0;
    if ((100 * seconds) / report.seconds < 0.5 && group !== 'Temporal dev server') continue;
    rows.push({ measure: `  CPU ${group}`, figure: share(seconds) });
  }
  if (product > 0) {
    rows.unshift({ measure: '  CPU gateway + worker process (one, as npm start)', figure: share(product) });
  }
  if (report.productResident) {
    const mb = (bytes: number) => `${int(bytes / 1_048_576)} MB`;
    rows.splice(product > 0 ? 1 : 0, 0, {
      measure: '  memory gateway + worker process: resident at the end / highest sampled',
      figure: `${mb(report.productResident.last)} / ${mb(report.productResident.highest)}`,
    });
  }
  if (report.temporalWrittenBytes > 0) {
    const mb = report.temporalWrittenBytes / 1_048_576;
    rows.push({
      measure: '  Temporal dev server: written to disk',
      figure: `${int(mb)} MB (${int(mb / report.seconds)} MB/s)`,
    });
  }
  rows.push({
    measure: '  CPU machine busy',
    figure: `${report.machineBusyPercent.toFixed(0)} % of ${report.cores} cores over ${report.seconds.toFixed(0)} s`,
  });
  if (!report.postgresSampled) rows.push({ measure: '  CPU PostgreSQL', figure: 'not sampled (no SQL access)' });
  return rows;
}

/** CPU seconds of the PostgreSQL groups in a report (backends, background processes, autovacuum of this db). */
function postgresSeconds(report: CpuReport): number {
  let sum = 0;
  for (const [group, seconds] of report.groups) {
    if (group.startsWith('PostgreSQL:') && group !== 'PostgreSQL: other databases') sum += seconds;
  }
  return sum;
}

/**
 * CPU per committed batch, the product's run beside the physical limit's (same rows, straight SQL): how much of the
 * machine and of PostgreSQL one batch costs each way, so the gap between them is a figure, not a guess.
 */
export function cpuPerBatchRows(
  product: { cpu: CpuReport; batches: number },
  limit: { cpu: CpuReport; batches: number } | null,
): Row[] {
  const per = (seconds: number, batches: number) => (batches > 0 ? ms((1000 * seconds) / batches) : '—');
  const machine = (r: CpuReport) => (r.machineBusyPercent / 100) * r.cores * r.seconds;
  const rows: Row[] = [
    {
      measure: '  CPU per accepted batch (product)',
      figure:
        `PostgreSQL ${per(postgresSeconds(product.cpu), product.batches)}, gateway + worker ` +
        `${per(productSeconds(product.cpu), product.batches)}, machine ${per(machine(product.cpu), product.batches)}`,
    },
  ];
  if (limit) {
    rows.push({
      measure: '  CPU per batch (physical limit)',
      figure:
        `PostgreSQL ${per(postgresSeconds(limit.cpu), limit.batches)}, ` +
        `machine ${per(machine(limit.cpu), limit.batches)}`,
    });
  }
  return rows;
}

/** One line of a report's CPU: the product's process, PostgreSQL, the Temporal dev server, the whole machine. */
export function cpuSummary(report: CpuReport): string {
  const share = (seconds: number) => `${((100 * seconds) / report.seconds).toFixed(0)} %`;
  return (
    `gateway + worker ${share(productSeconds(report))}, PostgreSQL ${share(postgresSeconds(report))}, ` +
    `Temporal ${share(report.groups.get('Temporal dev server') ?? 0)} of a core; ` +
    `machine ${report.machineBusyPercent.toFixed(0)} % of ${report.cores} cores`
  );
}

export const loadAverage = () =>
  loadavg()
    .map((v) => v.toFixed(2))
    .join(' / ');

export const perSecond = (count: number, seconds: number) => (seconds > 0 ? count / seconds : Number.NaN);
export { int, ms };
