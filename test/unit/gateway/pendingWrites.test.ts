// The writes the gateway finishes after answering (workers/gateway/pendingWrites.ts): what comes after waits for
// the conversation's (or the tenant's) writes running when it asks, never for later ones; a failure is reported,
// not thrown at a caller; a drain waits for all.
import { describe, expect, it } from 'vitest';
import { PendingWrites } from '../../../workers/gateway/pendingWrites.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const isSettled = async (promise: Promise<void> | null) => {
  if (promise === null) return true;
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return settled;
};

describe('PendingWrites', () => {
  it('waits per conversation and per tenant for the writes running at the time of asking', async () => {
    const writes = new PendingWrites();
    const a = deferred();
    const b = deferred();
    writes.add('t1', 'c1', () => a.promise);
    writes.add('t1', 'c2', () => b.promise);
    expect(writes.settled('t1', 'c3')).toBeNull();
    expect(writes.settledTenant('t2')).toBeNull();
    const c1 = writes.settled('t1', 'c1');
    const tenant = writes.settledTenant('t1');
    expect(await isSettled(c1)).toBe(false);

    a.resolve();
    expect(await isSettled(c1)).toBe(true);
    expect(await isSettled(tenant)).toBe(false);
    // A write added later is not what an earlier wait waits for.
    const later = deferred();
    writes.add('t1', 'c1', () => later.promise);
    b.resolve();
    expect(await isSettled(tenant)).toBe(true);
    expect(await isSettled(writes.settled('t1', 'c1'))).toBe(false);
    later.resolve();
    await writes.drain();
    expect(writes.settled('t1', 'c1')).toBeNull();
    expect(writes.settledTenant('t1')).toBeNull();
  });

  it('reports a failed write and lets what waits for it go on', async () => {
    const failures: Array<[string, string, string]> = [];
    const writes = new PendingWrites();
    writes.reportTo((error, where) => failures.push([where.tenantId, where.conversationId, (error as Error).message]));
    const failing = deferred();
    writes.add('t1', 'c1', () => failing.promise);
    const waiting = writes.settled('t1', 'c1');
    failing.reject(new Error('database unavailable'));
    await waiting;
    expect(failures).toEqual([['t1', 'c1', 'database unavailable']]);
    expect(writes.settled('t1', 'c1')).toBeNull();
  });

  it('a write that throws at once is reported as well', async () => {
    const failures: string[] = [];
    const writes = new PendingWrites((error) => failures.push((error as Error).message));
    writes.add('t1', 'c1', () => {
      throw new Error('refused');
    });
    await writes.drain();
    expect(failures).toEqual(['refused']);
  });
});
