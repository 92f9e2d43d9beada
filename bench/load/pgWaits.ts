// What the product's PostgreSQL backends spend the load on (issue #11: "a profile of where the time goes"), next to
// the CPU shares of cpu.ts: pg_stat_activity sampled every 50 ms, each active backend of the product's database (not
// the bench's own connections) counted as on CPU (no wait event), waiting for the WAL to reach the disk (the commit's
// flush: IO:WALSync, IO:WALWrite, LWLock:WALWrite), for a lock (Lock:*, other LWLocks), or other; and the WAL the
// cluster wrote meanwhile (pg_stat_wal, readable by any role), per accepted batch.
import type pg from 'pg';
import { type ActivityRow, postgresGroup } from './cpu.js';
import type { Row } from './report.js';
import { int } from './stats.js';

const SAMPLE_MS = 50;

/** Where an active backend was at a sample. */
export const WAIT_GROUPS = ['on CPU', 'WAL flush', 'locks', 'other'] as const;
type WaitGroup = (typeof WAIT_GROUPS)[number];

const WAL_FLUSH = new Set(['IO:WALSync', 'IO:WALWrite', 'LWLock:WALWrite']);

/** The group of a backend's wait event (`type:event`, or null while it runs). */
export function waitGroup(event: string | null): WaitGroup {
  if (event === null) return 'on CPU';
  if (WAL_FLUSH.has(event)) return 'WAL flush';
  if (event.startsWith('Lock:') || event.startsWith('LWLock:')) return 'locks';
  return 'other';
}

interface WalCounters {
  bytes: number;
  fullPageImages: number;
  syncs: number;
}

export interface PostgresWaits {
  /** Active-backend samples by group (idle backends and the bench's own are not counted). */
  samples: Map<WaitGroup, number>;
  /** Samples taken (each saw 0 or more active backends). */
  polls: number;
  /** The most frequent wait events, with their counts. */
  topEvents: Array<[string, number]>;
  /** The cluster's WAL over the load; null when pg_stat_wal could not be read. */
  wal: WalCounters | null;
}

async function walCounters(db: pg.Pool): Promise<WalCounters | null> {
  try {
    const { rows } = await db.query<{ bytes: string; fpi: string; syncs: string }>(
      'SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi, wal_sync::text AS syncs FROM pg_stat_wal',
    );
    const row = rows[0];
    return row ? { bytes: Number(row.bytes), fullPageImages: Number(row.fpi), syncs: Number(row.syncs) } : null;
  } catch {
    return null;
  }
}

/** Samples until `stop()`, which returns what was seen. */
export function samplePostgresWaits(db: pg.Pool, database: string) {
  const samples = new Map<WaitGroup, number>();
  const events = new Map<string, number>();
  let polls = 0;
  let running = true;
  const walStart = walCounters(db);

  const loop = (async () => {
    while (running) {
      try {
        const { rows } = await db.query<ActivityRow & { event: string | null }>(
          `SELECT pid, datname, application_name, backend_type,
                  CASE WHEN wait_event IS NULL THEN NULL ELSE wait_event_type || ':' || wait_event END AS event
             FROM pg_stat_activity
            WHERE state = 'active' AND pid <> pg_backend_pid()`,
        );
        polls += 1;
        for (const row of rows) {
          // The product's backends as cpu.ts counts them (the bench's and the limit's connections left out).
          if (postgresGroup(row, database) !== 'PostgreSQL: product backends') continue;
          const { event } = row;
          const group = waitGroup(event);
          samples.set(group, (samples.get(group) ?? 0) + 1);
          if (event !== null) events.set(event, (events.get(event) ?? 0) + 1);
        }
      } catch {
        // A sample lost to a busy pool or a restart: the shares are over the samples taken.
      }
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();

  return {
    stop: async (): Promise<PostgresWaits> => {
      running = false;
      await loop;
      const [start, end] = [await walStart, await walCounters(db)];
      const wal =
        start && end
          ? {
              bytes: end.bytes - start.bytes,
              fullPageImages: end.fullPageImages - start.fullPageImages,
              syncs: end.syncs - start.syncs,
            }
          : null;
      const topEvents = [...events.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4);
      return { samples, polls, topEvents, wal };
    },
  };
}

/** The rows printed under the CPU shares: where the active backends were, and the WAL per accepted batch. */
export function postgresWaitRows(waits: PostgresWaits, batches: number): Row[] {
  const active = WAIT_GROUPS.reduce((sum, group) => sum + (waits.samples.get(group) ?? 0), 0);
  const rows: Row[] = [];
  if (active > 0) {
    const share = (group: WaitGroup) => `${((100 * (waits.samples.get(group) ?? 0)) / active).toFixed(0)} % ${group}`;
    rows.push({
      measure: '  PostgreSQL product backends, when active',
      figure: `${WAIT_GROUPS.map(share).join(', ')} (${int(active)} samples; ${(active / waits.polls).toFixed(1)} active on average)`,
    });
    if (waits.topEvents.length > 0) {
      rows.push({
        measure: '  PostgreSQL: most frequent waits',
        figure: waits.topEvents.map(([event, n]) => `${event} ${((100 * n) / active).toFixed(0)} %`).join(', '),
      });
    }
  }
  if (waits.wal && batches > 0) {
    rows.push({
      measure: '  PostgreSQL: WAL per accepted batch (whole cluster)',
      figure:
        `${(waits.wal.bytes / batches / 1024).toFixed(1)} KB, ${(waits.wal.fullPageImages / batches).toFixed(2)} ` +
        `full-page images, ${(waits.wal.syncs / batches).toFixed(2)} flushes`,
    });
  }
  return rows;
}
