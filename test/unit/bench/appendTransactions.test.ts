// bench:load's line on the gateway's append transactions (bench/load/appendTransactions.ts): read from /metrics as
// prom-client writes it (the process's own registry, infra/metrics/registry.ts), and the span between two readings.
import { describe, expect, it } from 'vitest';
import { appendTransactionsOf, describeSpan } from '../../../bench/load/appendTransactions.js';
import { createMetrics } from '../../../infra/metrics/registry.js';

describe('append transactions from /metrics', () => {
  it('reads the histogram’s count and sum as the registry exposes them', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.appendGroupsDissolved.inc({ reason: 'conflict' });
    const before = appendTransactionsOf(await metrics.registry.metrics());
    expect(before).toEqual({ transactions: 0, batches: 0, dissolved: { conflict: 1 } });
    for (const batches of [1, 8, 7, 16]) metrics.appendGroupBatches.observe(batches);
    const quiet = appendTransactionsOf(await metrics.registry.metrics());
    expect(describeSpan(before, quiet)).toBe('4 for 32 batches: 8.0 per transaction; no group rolled back');
    metrics.appendGroupsDissolved.inc({ reason: 'lock_timeout' }, 2);
    metrics.appendGroupsDissolved.inc({ reason: 'conflict' });
    const after = appendTransactionsOf(await metrics.registry.metrics());
    expect(after).toEqual({ transactions: 4, batches: 32, dissolved: { conflict: 2, lock_timeout: 2 } });
    expect(describeSpan(before, after)).toBe(
      '4 for 32 batches: 8.0 per transaction; 3 groups rolled back (conflict 1, lock_timeout 2)',
    );
  });

  it('says so when the gateway’s /metrics has no such histogram or could not be read', () => {
    expect(appendTransactionsOf('# HELP other\nother_count 3\n')).toBeNull();
    const reading = { transactions: 5, batches: 9, dissolved: {} };
    expect(describeSpan(null, reading)).toBe('not available (/metrics not readable)');
    expect(describeSpan(reading, reading)).toBe('none');
  });
});
