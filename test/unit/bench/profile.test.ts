// bench:load --cpu-prof (bench/load/profile.ts): the self time of a V8 CPU profile by part and by function, without
// the process's start-up and without idle time.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { partOf, summariseProfile } from '../../../bench/load/profile.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

describe('partOf', () => {
  it.each([
    [frame('(garbage collector)'), 'GC'],
    [frame('(program)'), 'V8 / native (program)'],
    [frame('writev'), 'Node / V8 built-ins'],
    [frame('x', 'node:internal/streams/writable'), 'Node internal'],
    [frame('x', `file://${repo}node_modules/pg/lib/result.js`), 'PostgreSQL client (pg)'],
    [frame('x', `file://${repo}node_modules/@temporalio/worker/lib/worker.js`), 'Temporal SDK'],
    [frame('x', `file://${repo}node_modules/kysely/dist/esm/index.js`), 'kysely'],
    [frame('x', `file://${repo}infra/db/messageInsert.ts`), 'project infra/'],
  ])('%j → %s', (f, part) => {
    expect(partOf(f)).toBe(part);
  });
});

describe('summariseProfile', () => {
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)') },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('insertMessageRows', `file://${repo}infra/db/messageInsert.ts`, 40) },
      { id: 4, callFrame: frame('(garbage collector)') },
    ],
    startTime: 0,
    endTime: 10_000,
    // 1 ms each: 2 ms of start-up (node 3), then 3 ms idle, 4 ms in node 3, 1 ms GC.
    samples: [3, 3, 2, 2, 2, 3, 3, 3, 3, 4],
    timeDeltas: Array.from({ length: 10 }, () => 1000),
  };

  it('leaves out idle time and the first skipMs', () => {
    const summary = summariseProfile(profile, { skipMs: 2 });
    expect(summary.busyMs).toBe(5);
    expect(summary.totalMs).toBe(8);
    expect(summary.parts).toEqual([
      { part: 'project infra/', ms: 4 },
      { part: 'GC', ms: 1 },
    ]);
    expect(summary.functions[0]).toEqual({
      name: 'insertMessageRows',
      where: 'infra/db/messageInsert.ts:41',
      part: 'project infra/',
      ms: 4,
    });
  });

  it('counts everything without skipMs', () => {
    expect(summariseProfile(profile).busyMs).toBe(7);
  });
});
