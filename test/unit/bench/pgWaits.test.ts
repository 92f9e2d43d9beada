// bench:load's PostgreSQL rows (bench/load/pgWaits.ts): a backend's wait event in its group, and the shares and the
// WAL per accepted batch as printed.
import { describe, expect, it } from 'vitest';
import { type PostgresWaits, postgresWaitRows, waitGroup } from '../../../bench/load/pgWaits.js';

describe('waitGroup', () => {
  it.each([
    [null, 'on CPU'],
    ['IO:WALSync', 'WAL flush'],
    ['IO:WALWrite', 'WAL flush'],
    ['LWLock:WALWrite', 'WAL flush'],
    ['Lock:transactionid', 'locks'],
    ['LWLock:BufferContent', 'locks'],
    ['Client:ClientRead', 'other'],
    ['IO:DataFileExtend', 'other'],
  ])('%s → %s', (event, group) => {
    expect(waitGroup(event)).toBe(group);
  });
});

describe('postgresWaitRows', () => {
  const waits: PostgresWaits = {
    samples: new Map([
      ['on CPU', 58],
      ['WAL flush', 37],
      ['locks', 2],
      ['other', 3],
    ]),
    polls: 50,
    topEvents: [
      ['IO:WALSync', 20],
      ['LWLock:WALWrite', 17],
    ],
    wal: { bytes: 1024 * 1024, fullPageImages: 40, syncs: 80 },
  };

  it('prints the shares of the active samples, the most frequent waits and the WAL per batch', () => {
    expect(postgresWaitRows(waits, 64).map((row) => row.figure)).toEqual([
      '58 % on CPU, 37 % WAL flush, 2 % locks, 3 % other (100 samples; 2.0 active on average)',
      'IO:WALSync 20 %, LWLock:WALWrite 17 %',
      '16.0 KB, 0.63 full-page images, 1.25 flushes',
    ]);
  });

  it('leaves out what was not seen: no active sample, no WAL counters, no batch', () => {
    expect(postgresWaitRows({ samples: new Map(), polls: 10, topEvents: [], wal: null }, 64)).toEqual([]);
    expect(postgresWaitRows(waits, 0)).toHaveLength(2);
  });
});
