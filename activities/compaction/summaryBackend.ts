// SPEC §19 `compression.summary_backend` for one compaction: the tenant's effective host policy (tenant override →
// config.yaml → default, as the conversation activities resolve it) and the extractive body (issue #15 §2), built
// from the compaction's unpruned window like the §9.5 fallback, within the §6.2 budget; and the §19 archive pointer
// every committed summary ends with (engine/archivePointer.ts), whoever wrote the body.
import {
  budgetContentTokens,
  buildExtractiveSummaryBody,
  type ChatMessage,
  computeSummaryBudget,
  DEFAULT_COMPRESSION_CONFIG,
  DEFAULT_HOST_POLICY,
  type HostPolicy,
  stripArchivePointer,
  summarySimilarity,
  withArchivePointer,
} from '../../engine/index.js';
import { effectiveTenantPolicy } from '../../infra/config/tenantPolicy.js';
import { getTenantPolicy } from '../../infra/db/tenants.js';
import type { CompactionActivityDeps, CompactionSnapshot } from './record.js';

export async function hostPolicyForTenant(
  deps: Pick<CompactionActivityDeps, 'db' | 'baseHostPolicy'>,
  tenantId: string,
): Promise<HostPolicy> {
  const host = deps.baseHostPolicy ?? DEFAULT_HOST_POLICY;
  const stored = await getTenantPolicy(deps.db, tenantId);
  return effectiveTenantPolicy({ config: DEFAULT_COMPRESSION_CONFIG, host, engine: '' }, stored?.policy).host;
}

/** The extractive summary body of the compaction's window (the input rows, unpruned). */
export function extractiveBody(snapshot: CompactionSnapshot): string {
  const window: ChatMessage[] = snapshot.input.slice(snapshot.plan.headEnd, snapshot.plan.cut);
  const contextLength = snapshot.plan.contextLength;
  return buildExtractiveSummaryBody({
    window,
    previousSummary: snapshot.record.previous_summary,
    budgetTokens: computeSummaryBudget(budgetContentTokens(window, contextLength), contextLength),
  });
}

/**
 * SPEC §19 `archive_pointer`: the committed body ends with exactly one pointer line for the conversation, or none
 * when the key is off (a pointer an LLM copied from the previous summary is dropped either way).
 */
export function withPolicyPointer(body: string, policy: HostPolicy, conversationId: string): string {
  return policy.archivePointer ? withArchivePointer(body, conversationId) : stripArchivePointer(body);
}

/** SPEC §19 fixed point: the similarity of two summary bodies, without their (identical) pointer lines. */
export function bodySimilarity(previous: string | null, next: string | null): number | null {
  if (previous === null || next === null) return null;
  return summarySimilarity(stripArchivePointer(previous), stripArchivePointer(next));
}
