// The gateway's append transactions over the load, from its /metrics (`dctx_append_group_batches`, counted by
// infra/db/appendGroups.ts as each starts): how many, how many plain batches each held on average, and how many groups
// rolled back to run their batches alone (`dctx_append_groups_dissolved_total`, by reason).
import { int } from './report.js';

export interface AppendTransactions {
  transactions: number;
  batches: number;
  /** Groups rolled back so far, by reason (none listed: none yet). */
  dissolved: Record<string, number>;
}

/** The histogram's count and sum in a /metrics text (Prometheus exposition format); null when it has none. */
export function appendTransactionsOf(text: string): AppendTransactions | null {
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const transactions = value('dctx_append_group_batches_count');
  const batches = value('dctx_append_group_batches_sum');
  if (!Number.isFinite(transactions) || !Number.isFinite(batches)) return null;
  const dissolved: Record<string, number> = {};
  for (const [, reason, count] of text.matchAll(/^dctx_append_groups_dissolved_total\{reason="([^"]+)"\} (\S+)$/gm)) {
    dissolved[reason as string] = Number(count);
  }
  return { transactions, batches, dissolved };
}

/** The gateway's reading as it stands; null when /metrics cannot be read (a key, another process). */
export async function appendTransactions(url: string): Promise<AppendTransactions | null> {
  try {
    const response = await fetch(`${url}/metrics`);
    return response.ok ? appendTransactionsOf(await response.text()) : null;
  } catch {
    return null;
  }
}

/** What happened between two readings, as the report prints it. */
export function describeSpan(before: AppendTransactions | null, after: AppendTransactions | null): string {
  if (!before || !after) return 'not available (/metrics not readable)';
  const transactions = after.transactions - before.transactions;
  const batches = after.batches - before.batches;
  if (transactions <= 0) return 'none';
  const reasons = Object.entries(after.dissolved)
    .map(([reason, count]) => [reason, count - (before.dissolved[reason] ?? 0)] as const)
    .filter(([, count]) => count > 0);
  const rolledBack = reasons.reduce((sum, [, count]) => sum + count, 0);
  const groups =
    rolledBack === 0
      ? 'no group rolled back'
      : `${int(rolledBack)} groups rolled back (${reasons.map(([reason, count]) => `${reason} ${int(count)}`).join(', ')})`;
  return `${int(transactions)} for ${int(batches)} batches: ${(batches / transactions).toFixed(1)} per transaction; ${groups}`;
}
