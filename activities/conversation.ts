// Store activities of the conversation workflow (DESIGN.md §3–§4): open or resume the conversation's session,
// append message batches idempotently, and resolve the tenant's effective compression policy.
import { ApplicationFailure } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { ChatMessage, CompressionConfig } from '../engine/index.js';
import {
  type CacheTtl,
  CODEX_AUTORAISE_NOTICE_MARKER,
  ConfigError,
  codexAutoraiseNotice,
  estimateMessageTokensRough,
} from '../engine/index.js';
import { resolveTenantCompressionConfig } from '../infra/config/tenantPolicy.js';
import { appendMessages, loadTranscript, transcriptTotals } from '../infra/db/messages.js';
import type { Database } from '../infra/db/schema.js';
import { createSession, getSession, listConversationSessions, newestDescendant } from '../infra/db/sessions.js';
import { claimTenantMarker, getTenantPolicy } from '../infra/db/tenants.js';

export interface ConversationActivityDeps {
  db: Kysely<Database>;
  /** The compression section of config.yaml (defaults applied). */
  baseConfig: CompressionConfig;
  /** `prompt_caching.cache_ttl` of config.yaml (null: prompt caching disabled). */
  cacheTtl?: CacheTtl | null;
}

export interface OpenConversationInput {
  tenantId: string;
  conversationId: string;
  /** Used only when the conversation has no session yet (generated in the workflow). */
  proposedSessionId: string;
  model: string;
  provider: string | null;
  source: string;
  title: string | null;
}

export interface TenantConfig {
  config: CompressionConfig;
  policyVersion: number;
}

export interface OpenConversationResult extends TenantConfig {
  sessionId: string;
  cacheTtl: CacheTtl | null;
  resumed: boolean;
  /** SPEC §13.4: summary_body of the newest active row that has one. */
  previousSummary: string | null;
  activeMessages: number;
  activeTokens: number;
}

export interface AppendInput {
  tenantId: string;
  sessionId: string;
  items: Array<{ message: ChatMessage; idempotencyKey: string }>;
}

export interface AppendResult {
  /** Every key of the batch with its message's estimate, whether stored now or by an earlier attempt. */
  estimates: Array<{ idempotencyKey: string; tokenEstimate: number }>;
  /** Keys that were already stored before this call (a retried attempt finds its own earlier insert here). */
  duplicates: string[];
  /** The session's active rows after the append: the workflow's running totals, exact also after a retry. */
  activeMessages: number;
  activeTokens: number;
  policyVersion: number;
}

export function createConversationActivities(deps: ConversationActivityDeps) {
  const { db } = deps;

  async function tenantConfig(tenantId: string): Promise<TenantConfig> {
    const policy = await getTenantPolicy(db, tenantId);
    if (!policy) throw ApplicationFailure.nonRetryable(`unknown tenant '${tenantId}'`, 'UnknownTenant');
    try {
      return { config: resolveTenantCompressionConfig(deps.baseConfig, policy.policy), policyVersion: policy.version };
    } catch (err) {
      // A stored policy is validated on write; one that no longer validates must not stop the conversation.
      if (err instanceof ConfigError) return { config: deps.baseConfig, policyVersion: policy.version };
      throw err;
    }
  }

  return {
    async openConversation(input: OpenConversationInput): Promise<OpenConversationResult> {
      const config = await tenantConfig(input.tenantId);
      const sessions = await listConversationSessions(db, input.tenantId, input.conversationId);
      let sessionId: string;
      let resumed = false;
      if (sessions.length > 0) {
        const roots = sessions.filter((s) => s.parent_session_id === null);
        const start = roots[roots.length - 1] ?? sessions[0]!;
        sessionId = (await newestDescendant(db, input.tenantId, start.id)).id;
        resumed = true;
      } else {
        sessionId = input.proposedSessionId;
        await createSession(db, input.tenantId, {
          id: sessionId,
          conversationId: input.conversationId,
          source: input.source,
          model: input.model,
          provider: input.provider,
          title: input.title,
        });
      }
      const rows = await loadTranscript(db, input.tenantId, sessionId);
      let previousSummary: string | null = null;
      for (const row of rows) if (row.summaryBody) previousSummary = row.summaryBody;
      return {
        ...config,
        sessionId,
        cacheTtl: deps.cacheTtl === undefined ? '5m' : deps.cacheTtl,
        resumed,
        previousSummary,
        activeMessages: rows.length,
        activeTokens: rows.reduce((sum, r) => sum + r.tokenEstimate, 0),
      };
    },

    async appendMessages(input: AppendInput): Promise<AppendResult> {
      const session = await getSession(db, input.tenantId, input.sessionId);
      if (!session) throw ApplicationFailure.nonRetryable(`unknown session '${input.sessionId}'`, 'UnknownSession');
      const result = await appendMessages(db, input.tenantId, input.sessionId, input.items);
      const totals = await transcriptTotals(db, input.tenantId, input.sessionId);
      const policy = await getTenantPolicy(db, input.tenantId);
      return {
        estimates: input.items.map((item) => ({
          idempotencyKey: item.idempotencyKey,
          tokenEstimate: estimateMessageTokensRough(item.message),
        })),
        duplicates: result.duplicates,
        ...totals,
        policyVersion: policy?.version ?? 0,
      };
    },

    async loadTenantConfig(input: { tenantId: string }): Promise<TenantConfig> {
      return tenantConfig(input.tenantId);
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
