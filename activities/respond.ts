// The agent turn of chat backend mode (issue: LLM providers §3): send the prepared request (active transcript,
// sanitised, cache-marked for Claude on Anthropic/OpenRouter with the configured TTL) to the main model, store the
// assistant reply and the turn's usage with its cache economics. Idempotent by the workflow's turn key: a retry
// after the reply was stored returns the stored reply and never calls the model again.
import { ApplicationFailure, Context, heartbeat } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import { type CacheTtl, type ChatMessage, estimateMessageTokensRough, sanitizeToolPairs } from '../engine/index.js';
import { updateCompaction } from '../infra/db/compactions.js';
import { appendMessages, loadRowsByIds, loadTranscript, transcriptTotals } from '../infra/db/messages.js';
import type { Database } from '../infra/db/schema.js';
import { withTenant } from '../infra/db/tenant.js';
import { getTurn, recordTurn } from '../infra/db/turns.js';
import { chatCompletion } from '../infra/llm/chat.js';
import { createProviderClient } from '../infra/llm/clients.js';
import { ProviderKeyMissingError, type ProvidersConfig } from '../infra/llm/providers.js';
import type { ChatTool, ChatUsage } from '../infra/llm/types.js';

export interface RespondDeps {
  db: Kysely<Database>;
  /** Configured providers (config.yaml `providers:`); null: chat backend mode is not available. */
  providers: ProvidersConfig | null;
  cacheTtl: CacheTtl | null;
  /** Per-request timeout of the main model, ms (default 300 s). */
  respondTimeoutMs?: number;
  env?: Readonly<Record<string, string | undefined>>;
  heartbeatIntervalMs?: number;
}

export interface RespondInput {
  tenantId: string;
  conversationId: string;
  sessionId: string;
  model: string;
  provider: string | null;
  turnKey: string;
  tools: ChatTool[] | null;
  afterCompactionId: string | null;
}

export interface RespondResult {
  message: ChatMessage;
  finishReason: string | null;
  usage: ChatUsage;
  cachingEnabled: boolean;
  tokenEstimate: number;
  activeMessages: number;
  activeTokens: number;
}

function usageOf(turn: NonNullable<Awaited<ReturnType<typeof getTurn>>>): ChatUsage {
  return {
    prompt_tokens: turn.promptTokens,
    completion_tokens: turn.completionTokens,
    total_tokens: turn.promptTokens + turn.completionTokens,
    cache_read_tokens: turn.cacheReadTokens,
    cache_write_tokens: turn.cacheWriteTokens,
    uncached_input_tokens: turn.uncachedInputTokens,
  };
}

export function createRespondActivities(deps: RespondDeps) {
  const { db } = deps;

  async function storedReply(input: RespondInput): Promise<RespondResult | null> {
    const turn = await getTurn(db, input.tenantId, input.turnKey);
    if (!turn?.messageId) return null;
    const [row] = await loadRowsByIds(db, input.tenantId, [turn.messageId]);
    if (!row) return null;
    const totals = await transcriptTotals(db, input.tenantId, input.sessionId);
    return {
      message: row.message,
      finishReason: turn.finishReason,
      usage: usageOf(turn),
      cachingEnabled: turn.cachingEnabled,
      tokenEstimate: row.tokenEstimate,
      ...totals,
    };
  }

  async function messageIdByKey(tenantId: string, sessionId: string, key: string): Promise<number | null> {
    const row = await withTenant(db, tenantId, (tx) =>
      tx
        .selectFrom('messages')
        .select('id')
        .where('session_id', '=', sessionId)
        .where('idempotency_key', '=', key)
        .executeTakeFirst(),
    );
    return row?.id ?? null;
  }

  return {
    async respond(input: RespondInput): Promise<RespondResult> {
      const stored = await storedReply(input);
      if (stored) return stored;
      const providerId = input.provider ?? deps.providers?.main.provider ?? null;
      const provider = providerId ? deps.providers?.providers.get(providerId) : undefined;
      if (!provider) {
        throw ApplicationFailure.nonRetryable(
          providerId
            ? `provider '${providerId}' is not configured (config.yaml providers.${providerId})`
            : 'no LLM provider is configured for this conversation (config.yaml providers / model.provider)',
          'NoProvider',
        );
      }
      let client: ReturnType<typeof createProviderClient>;
      try {
        client = createProviderClient(provider, {
          timeoutMs: deps.respondTimeoutMs ?? 300_000,
          ...(deps.env ? { env: deps.env } : {}),
        });
      } catch (err) {
        if (err instanceof ProviderKeyMissingError)
          throw ApplicationFailure.nonRetryable(err.message, 'ProviderKeyMissing');
        throw err;
      }
      const rows = await loadTranscript(db, input.tenantId, input.sessionId);
      const messages = sanitizeToolPairs(rows.map((r) => r.message));
      const interval = setInterval(() => heartbeat(), deps.heartbeatIntervalMs ?? 5_000);
      let result: Awaited<ReturnType<typeof chatCompletion>>;
      try {
        result = await chatCompletion({
          provider: client,
          model: input.model,
          messages,
          ...(input.tools ? { tools: input.tools } : {}),
          cache: deps.cacheTtl ? { ttl: deps.cacheTtl } : null,
          signal: Context.current().cancellationSignal,
        });
      } finally {
        clearInterval(interval);
      }
      await appendMessages(db, input.tenantId, input.sessionId, [
        { message: result.message, idempotencyKey: input.turnKey },
      ]);
      const messageId = await messageIdByKey(input.tenantId, input.sessionId, input.turnKey);
      await recordTurn(db, input.tenantId, {
        id: input.turnKey,
        sessionId: input.sessionId,
        conversationId: input.conversationId,
        model: input.model,
        provider: provider.id,
        messageId,
        finishReason: result.finishReason,
        promptTokens: result.usage.prompt_tokens,
        completionTokens: result.usage.completion_tokens,
        cacheReadTokens: result.usage.cache_read_tokens,
        cacheWriteTokens: result.usage.cache_write_tokens,
        uncachedInputTokens: result.usage.uncached_input_tokens,
        cachingEnabled: result.cachingEnabled,
        afterCompactionId: input.afterCompactionId,
      });
      // A retry that raced an earlier attempt's append returns what the transcript holds.
      const reread = await storedReply(input);
      if (reread) return reread;
      const totals = await transcriptTotals(db, input.tenantId, input.sessionId);
      return {
        message: result.message,
        finishReason: result.finishReason,
        usage: result.usage,
        cachingEnabled: result.cachingEnabled,
        tokenEstimate: estimateMessageTokensRough(result.message),
        ...totals,
      };
    },

    /** Cache economics of a compaction, measured on the turns after it (issue: LLM providers §4). */
    async recordCacheRecovery(input: {
      tenantId: string;
      compactionId: string;
      rewriteTokens: number;
      recoveryTurns: number;
    }): Promise<void> {
      await updateCompaction(db, input.tenantId, input.compactionId, {
        cache_rewrite_tokens: input.rewriteTokens,
        cache_recovery_turns: input.recoveryTurns,
      });
    },
  };
}

export type RespondActivities = ReturnType<typeof createRespondActivities>;
