// The stored state of one compaction (the `compactions` row) as the phase activities read and write it. Every
// phase reads its inputs by compaction id from PostgreSQL, so no transcript travels through Temporal payloads.

import type { Kysely } from 'kysely';
import type { StoredPlan, StoredPrune } from '../contracts/compaction.js';
import type { ChatMessage, CompactionPlan, SummaryFailureClass } from '../engine/index.js';
import { loadRowsByIds } from '../infra/db/messages.js';
import type { CompactionRow, Database } from '../infra/db/schema.js';

export type { StoredPlan, StoredPrune } from '../contracts/compaction.js';

export interface CompactionSnapshot {
  record: CompactionRow;
  plan: StoredPlan;
  input: ChatMessage[];
}

export function storedPlan(record: CompactionRow): StoredPlan | null {
  return (record.plan as StoredPlan | null) ?? null;
}

export function storedPrune(record: CompactionRow): StoredPrune | null {
  return (record.prune_result as StoredPrune | null) ?? null;
}

export function failureClassOf(record: CompactionRow): SummaryFailureClass | null {
  return (record.failure_class as SummaryFailureClass | null) ?? null;
}

/** The compaction's input messages (unpruned), read back by row id: archived rows stay readable (nothing is deleted). */
export async function loadSnapshot(
  db: Kysely<Database>,
  tenantId: string,
  record: CompactionRow,
): Promise<CompactionSnapshot> {
  const plan = record.plan;
  if (!plan) throw new Error(`compaction ${record.id} has no plan yet (align did not run)`);
  const rows = await loadRowsByIds(db, tenantId, plan.inputRowIds);
  if (rows.length !== plan.inputRowIds.length) {
    throw new Error(`compaction ${record.id}: ${plan.inputRowIds.length - rows.length} input row(s) are missing`);
  }
  return { record, plan, input: rows.map((r) => r.message) };
}

/** The pruned working copy: the input with the stored replacements applied (new objects for changed rows). */
export function applyPrune(input: readonly ChatMessage[], prune: StoredPrune): ChatMessage[] {
  const working = input.slice();
  for (const [index, content] of prune.replacements) {
    const original = working[index];
    if (original) working[index] = { ...original, content };
  }
  return working;
}

export function planOf(plan: StoredPlan): Pick<CompactionPlan, 'headEnd' | 'cut' | 'reinsertIndex'> {
  return { headEnd: plan.headEnd, cut: plan.cut, reinsertIndex: plan.reinsertIndex };
}
