// bench:load's CPU per batch (bench/load/report.ts cpuPerBatchRows): the product's run beside the physical limit's,
// from the CPU seconds of each group, the machine's busy share and the batches each committed. Also the per-process
// rows (cpuRows) with the product's resident memory, and the /proc reader behind it (cpu.ts residentBytes).
import { describe, expect, it } from 'vitest';
import { type CpuReport, residentBytes } from '../../../bench/load/cpu.js';
import { cpuPerBatchRows, cpuRows } from '../../../bench/load/report.js';

function report(
  groups: Array<[string, number]>,
  busyPercent: number,
  seconds = 10,
  productResident: CpuReport['productResident'] = null,
): CpuReport {
  return {
    seconds,
    cores: 2,
    groups: new Map(groups) as CpuReport['groups'],
    machineBusyPercent: busyPercent,
    postgresSampled: true,
    temporalWrittenBytes: 0,
    productResident,
  };
}

describe('cpuPerBatchRows', () => {
  const product = report(
    [
      ['gateway + worker: main JS thread', 5],
      ['gateway + worker: other threads', 1],
      ['PostgreSQL: product backends', 9],
      ['PostgreSQL: background (cluster)', 1],
      ['PostgreSQL: other databases', 4],
      ['bench process (load generator)', 2],
    ],
    90,
  );

  it("sums PostgreSQL's groups of this database and the product's threads, per accepted batch", () => {
    // 4,000 batches: PostgreSQL 10 s (other databases left out), gateway + worker 6 s, machine 90 % of 2 × 10 s.
    expect(cpuPerBatchRows({ cpu: product, batches: 4000 }, null)).toEqual([
      {
        measure: '  CPU per accepted batch (product)',
        figure: 'PostgreSQL 2.5 ms, gateway + worker 1.5 ms, machine 4.5 ms',
      },
    ]);
  });

  it("puts the physical limit's run beside it", () => {
    const limit = report(
      [
        ['PostgreSQL: bench connections', 15],
        ['PostgreSQL: autovacuum (this db)', 1],
        ['bench process (load generator)', 3],
      ],
      95,
    );
    const rows = cpuPerBatchRows({ cpu: product, batches: 4000 }, { cpu: limit, batches: 8000 });
    expect(rows[1]).toEqual({
      measure: '  CPU per batch (physical limit)',
      figure: 'PostgreSQL 2.0 ms, machine 2.4 ms',
    });
  });

  it('prints a dash when nothing was committed', () => {
    expect(cpuPerBatchRows({ cpu: product, batches: 0 }, null)[0]?.figure).toBe(
      'PostgreSQL —, gateway + worker —, machine —',
    );
  });
});

describe('cpuRows', () => {
  it("prints the product's resident memory below its CPU share, at the end and the highest sampled", () => {
    const mb = 1_048_576;
    const rows = cpuRows(
      report([['gateway + worker: main JS thread', 5]], 50, 10, { last: 380 * mb, highest: 412.4 * mb }),
    );
    expect(rows.slice(0, 2)).toEqual([
      { measure: '  CPU gateway + worker process (one, as npm start)', figure: '50 % of a core' },
      {
        measure: '  memory gateway + worker process: resident at the end / highest sampled',
        figure: '380 MB / 412 MB',
      },
    ]);
  });

  it('prints no memory row when the product was not sampled', () => {
    const rows = cpuRows(report([['gateway + worker: main JS thread', 5]], 50));
    expect(rows.some((row) => row.measure.includes('memory'))).toBe(false);
  });
});

describe('residentBytes', () => {
  it("reads a process's resident memory from /proc, and null for a process that does not exist", () => {
    const resident = residentBytes(process.pid);
    const { rss } = process.memoryUsage();
    // Both read the same kernel figure a moment apart (kB × 1,024 here): within 1 % of each other.
    expect(resident).not.toBeNull();
    expect(Math.abs((resident ?? 0) - rss) / rss).toBeLessThan(0.01);
    expect(residentBytes(2 ** 22 + 1)).toBeNull();
  });
});
