// SPEC §19 `compression.summary_backend` for one compaction: the tenant's effective host policy (tenant override →
// config.yaml → default, as the conversation activities resolve it) and the extractive body (issue #15 §2), built
// from the compaction's unpruned window like the §9.5 fallback, within the §6.2 budget.
import {
  budgetContentTokens,
  buildExtractiveSummaryBody,
  type ChatMessage,
  ConfigError,
  computeSummaryBudget,
  DEFAULT_HOST_POLICY,
  type HostPolicy,
} from '../../engine/index.js';
import { resolveTenantHostPolicy } from '../../infra/config/tenantPolicy.js';
import { getTenantPolicy } from '../../infra/db/tenants.js';
import type { CompactionActivityDeps, CompactionSnapshot } from './record.js';

export async function hostPolicyForTenant(
  deps: Pick<CompactionActivityDeps, 'db' | 'baseHostPolicy'>,
  tenantId: string,
): Promise<HostPolicy> {
  const base = deps.baseHostPolicy ?? DEFAULT_HOST_POLICY;
  const stored = await getTenantPolicy(deps.db, tenantId);
  try {
    return resolveTenantHostPolicy(base, stored?.policy);
  } catch (err) {
    // A stored policy is validated on write; one that no longer validates must not stop the compaction.
    if (err instanceof ConfigError) return base;
    throw err;
  }
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
