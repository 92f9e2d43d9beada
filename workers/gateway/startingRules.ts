// The rules a new conversation starts with (issue #11 §2): written with its row, from its tenant's compression
// policy as the workflow would resolve it (SPEC §19), so that its first batches need not wait for the workflow's
// first publication, which replaces them.
import { isDeepStrictEqual } from 'node:util';
import type { Kysely } from 'kysely';
import { type CompressionConfig, ConfigError, resolveUsableContextLength } from '../../engine/index.js';
import { resolveTenantCompressionConfig } from '../../infra/config/tenantPolicy.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';
import { getTenantPolicy } from '../../infra/db/tenants.js';
import { startingQuietRules } from '../../workflows/conversation/quiet.js';

export interface StartingRulesBase {
  /**
   * The deployment's compression configuration (config.yaml): with it, a new conversation gets the quiet rules of
   * its tenant's policy at creation; without it, none.
   */
  baseConfig?: CompressionConfig;
}

type Window = { model: string; provider?: string | null; contextLength?: number | null };

/** The starting rules of a conversation of the tenant with this model; null: the workflow decides from the start. */
export async function startingRules(db: Kysely<Database>, base: StartingRulesBase, tenantId: string, window: Window) {
  if (!base.baseConfig) return null;
  // A policy changed meanwhile bumps the conversations' epochs; one created in that instant keeps these rules
  // until the workflow's first publication, which always reflects the policy it loaded.
  const policy = (await getTenantPolicy(db, tenantId))?.policy ?? {};
  const model = { model: window.model, provider: window.provider ?? null };
  try {
    return startingQuietRules(resolveTenantCompressionConfig(base.baseConfig, policy), {
      ...model,
      contextLength: resolveUsableContextLength(model.model, model.provider, window.contextLength ?? null),
    });
  } catch (err) {
    // A stored policy that no longer validates: the workflow falls back to the deployment's (activities).
    if (err instanceof ConfigError) return null;
    throw err;
  }
}

/**
 * The starting rules the conversation's batches were judged by are the ones its tenant's policy gives now: a
 * policy changed in the instant it was created leaves them stale until the workflow's first publication.
 */
export async function startingRulesHold(
  db: Kysely<Database>,
  base: StartingRulesBase,
  tenantId: string,
  row: ConversationRow,
): Promise<boolean> {
  if (row.quiet_rules === null) return false;
  const window = { model: row.model, provider: row.provider, contextLength: row.context_length };
  const current = await startingRules(db, base, tenantId, window);
  if (!current) return false;
  // Compared as stored (JSON drops undefined fields), whatever the epoch since.
  const asStored = JSON.parse(JSON.stringify({ ...current, epoch: row.quiet_rules.epoch }));
  return isDeepStrictEqual(asStored, row.quiet_rules);
}
