// The steps of an agent turn (chat backend mode), shared by the respond activity (respond.ts: the workflow runs the
// turn) and the gateway (a quiet turn it runs itself, issue #11 §2, workers/gateway/directTurn.ts): where the turn
// starts (the turn as stored by an earlier attempt, or the transcript), the model call on the prepared context, and
// the reply stored with its turn record in one transaction (issue #9 §2).
import { ApplicationFailure } from '@temporalio/activity';
import type { CacheRecovery } from '../contracts/conversation.js';
import { FailureType } from '../contracts/failures.js';
import { prepareContext } from '../engine/index.js';
import type { NativeCovered, NativeReplay } from '../engine/nativeCompaction.js';
import type { RecordedAppServerCompaction } from '../infra/db/appServer.js';
import { updateCompaction } from '../infra/db/compactions.js';
import { type AppendOptions, type AppendResult, appendToConversation } from '../infra/db/conversationAppend.js';
import { totalsOf } from '../infra/db/conversationHead.js';
import { selectConversation } from '../infra/db/conversations.js';
import { historyKey } from '../infra/db/historyKeys.js';
import { type StoredMessage, selectActiveRows, selectRowsByIds } from '../infra/db/messages.js';
import { pipelined } from '../infra/db/queuedStatements.js';
import { IdempotencyConflictError } from '../infra/db/storeErrors.js';
import { READ_ONLY, withTenant } from '../infra/db/tenant.js';
import { insertTurnQuery, selectTurn, turnUsage } from '../infra/db/turns.js';
import { chatCompletion } from '../infra/llm/chat.js';
import { ProviderClients } from '../infra/llm/clients.js';
import { chatProviderOf, chatProviderProblem, type ProviderConfig } from '../infra/llm/providers.js';
import type { OnText } from '../infra/llm/streamedCall.js';
import type { ChatResult } from '../infra/llm/types.js';
import { anthropicBlockRequest } from './anthropicNative.js';
import { createAppServerSessions } from './codexAppServer.js';
import type { RespondDeps, RespondInput, RespondResult } from './respond.js';
import { afterNativeCall, nativeRequest } from './responsesNative.js';

/** The provider's answer to a turn, before it is stored. */
export interface TurnCall {
  provider: ProviderConfig;
  result: ChatResult;
  /** The reply's native checkpoint (SPEC §15.1 replay data), stored with its turn record; null for most turns. */
  replay?: NativeReplay | null;
  /** With `replay`: what the checkpoint stands in for among the rows the turn read. */
  nativeCovered?: NativeCovered;
  /** A Codex app-server turn (SPEC §15.2): the compactions it reported, already recorded. */
  appServer?: RecordedAppServerCompaction[];
}

/**
 * The agent turn's steps, shared by the respond activity (the workflow runs the turn) and the gateway (it runs a
 * quiet turn itself, issue #11 §2): where the turn starts, the model call, and storing the reply with its turn record.
 */
export function createTurnRunner(deps: RespondDeps) {
  const { db } = deps;
  const env = deps.env ?? process.env;
  const appServer = createAppServerSessions({ db, appServers: deps.appServers ?? null });
  const clients = new ProviderClients();

  /**
   * Where a turn starts, in one read-only transaction: the turn as stored by an earlier attempt (reply and turn are
   * written together), else the conversation's current transcript — its current session, not the one the workflow
   * knew: a background compaction may have rotated it meanwhile (SPEC §19 `background`); the log is the truth.
   */
  function startingPoint(input: RespondInput): Promise<{ stored: RespondResult } | { rows: StoredMessage[] }> {
    return withTenant(
      db,
      input.tenantId,
      async (tx) => {
        const [turn, conversation] = await Promise.all([
          selectTurn(tx, input.turnKey),
          selectConversation(tx, input.tenantId, input.conversationId),
        ]);
        if (turn?.messageId != null && conversation) {
          const [row] = await selectRowsByIds(tx, input.tenantId, [turn.messageId]);
          if (row) {
            const stored: RespondResult = {
              messageId: turn.messageId,
              finishReason: turn.finishReason,
              usage: turnUsage(turn),
              cachingEnabled: turn.cachingEnabled,
              tokenEstimate: row.tokenEstimate,
              totals: totalsOf(conversation),
              ...(turn.replay ? { nativeCheckpoint: true } : {}),
              ...(chatProviderOf(deps.providers, input.provider)?.api === 'codex_app_server'
                ? { appServer: { compressionCount: -1, compactions: [] } }
                : {}),
            };
            return { stored };
          }
        }
        const sessionId = conversation?.current_session_id ?? input.sessionId;
        return { rows: await selectActiveRows(tx, input.tenantId, sessionId) };
      },
      READ_ONLY,
    );
  }

  /**
   * The model call on the transcript's prepared context; a missing provider or key fails for good. `onText`
   * streams it (the gateway's `stream: true` turns): each piece of the reply's text as it arrives.
   */
  async function call(
    input: RespondInput,
    rows: readonly StoredMessage[],
    options: { signal?: AbortSignal; onText?: OnText; keepJson?: boolean } = {},
  ): Promise<TurnCall> {
    const problem = chatProviderProblem(deps.providers, input.provider, env);
    const provider = chatProviderOf(deps.providers, input.provider);
    if (problem || !provider) {
      const type = provider ? FailureType.ProviderKeyMissing : FailureType.NoProvider;
      throw ApplicationFailure.nonRetryable(problem ?? 'no LLM provider is configured', type);
    }
    if (provider.api === 'codex_app_server') {
      const ref = { tenantId: input.tenantId, conversationId: input.conversationId, model: input.model };
      const turn = await appServer.turn({ ...ref, lastPromptTokens: input.lastPromptTokens ?? 0 }, provider, rows, {
        timeoutMs: deps.respondTimeoutMs ?? 300_000,
        ...options,
      });
      return { provider, result: turn.result, appServer: turn.compactions };
    }
    const client = clients.get(provider, { timeoutMs: deps.respondTimeoutMs ?? 300_000, env });
    // A Responses provider: from the newest native checkpoint on, with the gate's field (responsesNative.ts).
    const native = await nativeRequest(db, input, client, rows);
    // An Anthropic route: from the session's compaction block, when this route issued it (anthropicNative.ts).
    const block = await anthropicBlockRequest(db, input.tenantId, client, rows);
    // The same prepared context as the gateway's /context route (engine/prepareContext.ts).
    const context = prepareContext(
      (block?.rows ?? native?.rows ?? rows).map((r) => r.message),
      { model: input.model, cachingRoute: provider.cachingRoute, cacheTtl: deps.cacheTtl },
    );
    const result = await chatCompletion({
      provider: client,
      model: input.model,
      context,
      ...(input.tools ? { tools: input.tools } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onText ? { onText: options.onText } : {}),
      // Rows of the gateway's transcript cache: the same objects every turn, so their JSON is kept (infra/llm/jsonBody.ts).
      ...(options.keepJson ? { keepJson: true } : {}),
      ...(native?.leadingItems ? { leadingItems: native.leadingItems } : {}),
      ...(block ? { leadingCompaction: block.leading } : {}),
      ...(native?.compactThreshold !== undefined ? { compactThreshold: native.compactThreshold } : {}),
    });
    const checkpoint = await afterNativeCall(db, input.tenantId, native, result, rows);
    return {
      provider,
      result,
      ...(checkpoint ? { replay: checkpoint.replay, nativeCovered: checkpoint.covered } : {}),
    };
  }

  /**
   * The reply and the turn record in one transaction: a crash leaves both or neither. `settle` sets further columns
   * of the conversation's row with the append (the gateway's notification decision). Null: a concurrent attempt
   * stored the reply first (and recorded the turn).
   */
  async function store(
    input: RespondInput,
    call: TurnCall,
    settle?: AppendOptions['settle'],
  ): Promise<{ result: RespondResult; appended: AppendResult } | null> {
    try {
      return await storeReply(input, call, settle);
    } catch (err) {
      // Two attempts at one turn both called the model (a retry that another gateway took to the workflow while this
      // one still ran, or a respond attempt retried while an earlier one lived on): their replies differ, so the
      // later one finds the turn's key taken by another message. The reply stored first is the turn's.
      if (err instanceof IdempotencyConflictError && !input.replyKey && (await storedTurn(input))) return null;
      throw err;
    }
  }

  async function storeReply(
    input: RespondInput,
    { provider, result, replay, nativeCovered, appServer: compactions }: TurnCall,
    settle?: AppendOptions['settle'],
  ): Promise<{ result: RespondResult; appended: AppendResult } | null> {
    const appended = await appendToConversation(
      db,
      input.tenantId,
      input.conversationId,
      [{ message: result.message, idempotencyKey: replyKeyOf(input, result.message) }],
      {
        ...(settle ? { settle } : {}),
        // The turn's answer carries the status of the conversation as its reply left it (directTurn.ts).
        row: true,
        within: async (tx, append) => {
          const reply = append.appended[0];
          if (!reply) return; // stored by a concurrent attempt, which also recorded the turn
          // Travels with the reply's insert and the COMMIT: if it fails, nothing of the reply is stored either.
          await pipelined(
            tx,
            insertTurnQuery(tx, input.tenantId, {
              id: input.turnKey,
              sessionId: append.sessionId,
              conversationId: input.conversationId,
              model: input.model,
              provider: provider.id,
              messageId: reply.id,
              finishReason: result.finishReason,
              promptTokens: result.usage.prompt_tokens,
              completionTokens: result.usage.completion_tokens,
              cacheReadTokens: result.usage.cache_read_tokens,
              cacheWriteTokens: result.usage.cache_write_tokens,
              uncachedInputTokens: result.usage.uncached_input_tokens,
              cachingEnabled: result.cachingEnabled,
              afterCompactionId: input.afterCompactionId,
              replay: replay ?? null,
            }),
          );
        },
      },
    );
    const reply = appended.appended[0];
    if (!reply) return null;
    return {
      appended,
      result: {
        messageId: reply.id,
        finishReason: result.finishReason,
        usage: result.usage,
        cachingEnabled: result.cachingEnabled,
        tokenEstimate: reply.tokenEstimate,
        totals: appended.totals!,
        replySeq: appended.totals!.batchSeq,
        ...(replay ? { nativeCheckpoint: true } : {}),
        ...(replay && nativeCovered ? { nativeCovered } : {}),
        ...(compactions ? { appServer: appServerOutcome(compactions) } : {}),
      },
    };
  }

  /** The turn as stored by an earlier attempt, or null. */
  async function storedTurn(input: RespondInput): Promise<RespondResult | null> {
    const start = await startingPoint(input);
    return 'stored' in start ? start.stored : null;
  }

  /** Cache economics of a compaction, measured on the turns after it (issue: LLM providers §4). Idempotent. */
  async function recordCacheRecovery(tenantId: string, recovery: CacheRecovery): Promise<void> {
    await updateCompaction(db, tenantId, recovery.compactionId, {
      cache_rewrite_tokens: recovery.rewriteTokens,
      cache_recovery_turns: recovery.recoveryTurns,
    });
  }

  return { startingPoint, call, store, storedTurn, recordCacheRecovery };
}

export type TurnRunner = ReturnType<typeof createTurnRunner>;

/** The reply's idempotency key: the turn id, or for a drop-in client's turn the key its next history gives it. */
function replyKeyOf(input: RespondInput, reply: ChatResult['message']): string {
  return input.replyKey ? historyKey(input.replyKey.prefix, input.replyKey.position, reply) : input.turnKey;
}

/** What the workflow learns of an app-server turn's compactions: ids and the session's count (-1: none reported). */
function appServerOutcome(compactions: readonly RecordedAppServerCompaction[]): RespondResult['appServer'] {
  const last = compactions.at(-1);
  return { compressionCount: last ? last.compressionCount : -1, compactions: compactions.map((c) => c.compactionId) };
}
