// The figures issue #11 measured before its work ("today": every message through Temporal), on this machine kind
// (2 cores; gateway + worker + Temporal dev server + PostgreSQL 15, `npm start` with DATABASE_URL), in its two
// configurations. Printed beside this run's figures so that a run shows where the product stands against both.

export interface BeforeFigures {
  /** The configuration the column was measured in. */
  title: string;
  acceptedPerSecond: string;
  acceptLatency: string;
  statusAfterLoad: string;
  creation: string;
  createLatency: string;
  rows: string;
  limit: string;
  ratio: string;
  temporalCpu: string;
}

const LIMIT = '2,948 msg/s, p99 52 ms (32 conn.)';

const SMALL: BeforeFigures = {
  title: 'issue #11 before (200 conv., 16 clients)',
  acceptedPerSecond: '79',
  acceptLatency: '366 / — / 1,088 ms',
  statusAfterLoad: 'p95 576 ms',
  creation: '—',
  createLatency: '—',
  rows: '0 / 0',
  limit: LIMIT,
  ratio: '0.03×',
  temporalCpu: '70–100 %',
};

const LARGE: BeforeFigures = {
  title: 'issue #11 before (1,000 conv., 32 clients)',
  acceptedPerSecond: '172',
  acceptLatency: '345 / — / 996 ms',
  statusAfterLoad: 'p95 23 s, 30 of 1,000 timed out',
  creation: '14',
  createLatency: '1.9 s / —',
  rows: '0 / 0',
  limit: LIMIT,
  ratio: '0.06×',
  temporalCpu: '70–100 %',
};

/** The column closest to a run's configuration. */
export function beforeFigures(conversations: number, clients: number): BeforeFigures {
  return conversations <= 500 && clients <= 24 ? SMALL : LARGE;
}
