// Store activities of the conversation workflow (DESIGN.md §3–§4): open or resume the conversation from its record,
// publish the workflow's state (applied batches, status snapshot) where the gateway reads it, open a notification
// before a background compaction settles, resolve the tenant's effective policy, count a tenant's recent automatic
// compactions (SPEC §19 breaker), the one-time notices, and who owns a conversation's context (SPEC §15.2).
// Messages never pass through here: the gateway commits them.
import { ApplicationFailure } from '@temporalio/activity';
import { type Kysely, sql } from 'kysely';
import type { ConversationRuntime, ConversationStatus } from '../contracts/conversation.js';
import type { NotificationFold, QuietFold, QuietRules } from '../contracts/conversationLog.js';
import { FailureType } from '../contracts/failures.js';
import {
  type CacheTtl,
  CODEX_AUTORAISE_NOTICE_MARKER,
  type CompressionConfig,
  codexAutoraiseNotice,
  DEFAULT_HOST_POLICY,
  type HostPolicy,
} from '../engine/index.js';
import { effectiveTenantPolicy } from '../infra/config/tenantPolicy.js';
import { createCompactionRecord, updateCompaction } from '../infra/db/compactions.js';
import { type LogTotals, totalsOf } from '../infra/db/conversationHead.js';
import { createConversation, recordApplied } from '../infra/db/conversations.js';
import { openNotification } from '../infra/db/quietBatches.js';
import type { Database } from '../infra/db/schema.js';
import { withTenant } from '../infra/db/tenant.js';
import { claimTenantMarker, getTenantPolicy } from '../infra/db/tenants.js';
import { chatProviderOf, type ProvidersConfig } from '../infra/llm/providers.js';

export interface ConversationActivityDeps {
  db: Kysely<Database>;
  /** The compression section of config.yaml (defaults applied). */
  baseConfig: CompressionConfig;
  /** The SPEC §19 host policy keys of config.yaml (defaults applied). */
  baseHostPolicy?: HostPolicy;
  /** `prompt_caching.cache_ttl` of config.yaml (null: prompt caching disabled). */
  cacheTtl?: CacheTtl | null;
  /** config.yaml `providers:`: which of them is a Codex app-server (SPEC §15.2 runtime). */
  providers?: ProvidersConfig | null;
}

export interface OpenConversationInput {
  tenantId: string;
  conversationId: string;
  /** Used only when the conversation has no record yet (generated in the workflow). */
  proposedSessionId: string;
  model: string;
  provider: string | null;
  contextLength: number | null;
  source: string;
  title: string | null;
}

export interface TenantConfig {
  config: CompressionConfig;
  host: HostPolicy;
  policyVersion: number;
}

export interface OpenConversationResult extends TenantConfig {
  sessionId: string;
  cacheTtl: CacheTtl | null;
  totals: LogTotals;
  appliedSeq: number;
  /** The conversation's notification epoch (migration 0009); absent in histories recorded before it. */
  notifyEpoch?: number;
  /** Quiet batches committed before the workflow opened (counted in `appliedSeq`), to apply at once. */
  quietFold?: QuietFold | null;
  /** The highest compaction number of the current session (child workflow ids continue after it). */
  compactionSeq: number;
  /** SPEC §15.2: the conversation's provider is a Codex app-server (absent in histories recorded before it). */
  runtime?: ConversationRuntime | null;
}

export function createConversationActivities(deps: ConversationActivityDeps) {
  const { db } = deps;
  const host = deps.baseHostPolicy ?? DEFAULT_HOST_POLICY;
  const runtimeOf = (provider: string | null): ConversationRuntime | null =>
    chatProviderOf(deps.providers ?? null, provider)?.api === 'codex_app_server' ? 'codex_app_server' : null;

  async function tenantConfig(tenantId: string): Promise<TenantConfig> {
    const policy = await getTenantPolicy(db, tenantId);
    if (!policy) throw ApplicationFailure.nonRetryable(`unknown tenant '${tenantId}'`, FailureType.UnknownTenant);
    const effective = effectiveTenantPolicy({ config: deps.baseConfig, host, engine: '' }, policy.policy);
    return { config: effective.config, host: effective.host, policyVersion: policy.version };
  }

  return {
    async openConversation(input: OpenConversationInput): Promise<OpenConversationResult> {
      const config = await tenantConfig(input.tenantId);
      const { conversation } = await createConversation(db, input.tenantId, {
        id: input.conversationId,
        sessionId: input.proposedSessionId,
        model: input.model,
        provider: input.provider,
        contextLength: input.contextLength,
        source: input.source,
        title: input.title,
      });
      const sessionId = conversation.current_session_id;
      const found = await withTenant(db, input.tenantId, async (tx) => {
        const seq = await sql<{ n: number | null }>`
          SELECT max(seq) AS n FROM compactions WHERE tenant_id = ${input.tenantId} AND session_id = ${sessionId}`.execute(
          tx,
        );
        return { compactionSeq: Number(seq.rows[0]?.n ?? 0) };
      });
      return {
        ...config,
        ...found,
        sessionId,
        cacheTtl: deps.cacheTtl === undefined ? '5m' : deps.cacheTtl,
        totals: totalsOf(conversation),
        appliedSeq: conversation.applied_seq,
        notifyEpoch: conversation.notify_epoch,
        quietFold: conversation.quiet_fold,
        runtime: runtimeOf(conversation.provider),
      };
    },

    /** SPEC §15.2: who owns the context of a conversation on `provider` (after a model switch). */
    async conversationRuntime(input: { provider: string | null }): Promise<ConversationRuntime | null> {
      return runtimeOf(input.provider);
    },

    /**
     * Publishes what the workflow decided: the batches applied and the status snapshot (read by the gateway without
     * the worker) — unless the tenant's policy changed since the workflow loaded it: then nothing is written and the
     * new version is returned, so the workflow takes the new policy over and publishes a status that reflects it.
     */
    async recordState(input: {
      tenantId: string;
      conversationId: string;
      appliedSeq: number;
      /** The policy version the status was computed with; null: record whatever the current version is. */
      policyVersion: number | null;
      status: ConversationStatus;
      /** What the gateway need not notify (engine/quietBatches.ts); absent in histories recorded before it. */
      quietRules?: QuietRules | null;
      /** Notices emitted since the last publication: events of the tenant's feed, each written once by its key. */
      notices?: Array<{ key: string; text: string }>;
    }): Promise<{ recorded: boolean; policyVersion: number }> {
      return recordApplied(db, input.tenantId, input.conversationId, {
        appliedSeq: input.appliedSeq,
        state: input.status,
        quietRules: input.quietRules ?? null,
        policyVersion: input.policyVersion,
        ...(input.notices?.length ? { notices: input.notices } : {}),
      });
    },

    /**
     * Before a background compaction's outcome is applied: a new notification epoch (the rules published while it
     * ran are void until the workflow publishes again) and the quiet batches committed meanwhile, which the workflow
     * applies first (engine/quietBatches.ts `foldsAtSettle`). Content-free, like every notification.
     */
    async openNotification(input: { tenantId: string; conversationId: string }): Promise<NotificationFold> {
      return (await openNotification(db, input.tenantId, input.conversationId)).notification;
    },

    async loadTenantConfig(input: { tenantId: string }): Promise<TenantConfig> {
      return tenantConfig(input.tenantId);
    },

    /**
     * SPEC §15.1: the record of a checkpoint the Responses server made (trigger `responses_native`, in place, no
     * rows change), which the cache economics measured after it are written to. Idempotent.
     */
    async recordNativeCompaction(input: {
      tenantId: string;
      conversationId: string;
      sessionId: string;
      compactionId: string;
    }): Promise<void> {
      await createCompactionRecord(db, input.tenantId, {
        id: input.compactionId,
        sessionId: input.sessionId,
        conversationId: input.conversationId,
        seq: 0,
        trigger: 'responses_native',
        inPlace: true,
      });
      await updateCompaction(db, input.tenantId, input.compactionId, { status: 'committed' });
    },

    /** SPEC §19 tenant breaker: the tenant's automatic compactions committed within the last `sinceMs`. */
    async countTenantAutoCompactions(input: { tenantId: string; sinceMs: number }): Promise<number> {
      return withTenant(db, input.tenantId, async (tx) => {
        const result = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM compactions
           WHERE tenant_id = ${input.tenantId}
             AND created_at > now() - make_interval(secs => ${input.sinceMs / 1000})
             AND "trigger" IN ('preflight', 'post_response', 'hygiene')
             AND status IN ('committed', 'fallback')`.execute(tx);
        return result.rows[0]?.n ?? 0;
      });
    },

    /** SPEC §4.5: the gpt-5.5 Codex autoraise notice, shown once per tenant (marker persisted per tenant). */
    async autoraiseNotice(input: {
      tenantId: string;
      model: string;
      provider: string | null;
      contextLength: number;
      config: CompressionConfig;
    }): Promise<string | null> {
      // Decide whether the notice applies at all, then claim the marker atomically: only the caller that changes it
      // shows the notice (two conversations starting together must not both show it).
      const decision = codexAutoraiseNotice({
        model: input.model,
        ...(input.provider ? { provider: input.provider } : {}),
        contextLength: input.contextLength,
        config: input.config,
        storedMarker: null,
      });
      if (!decision.show || !decision.markerValue) return null;
      const claimed = await claimTenantMarker(db, input.tenantId, CODEX_AUTORAISE_NOTICE_MARKER, decision.markerValue);
      if (!claimed) return null;
      return decision.text ?? null;
    },
  };
}

export type ConversationActivities = ReturnType<typeof createConversationActivities>;
