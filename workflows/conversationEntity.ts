// The operations of one conversation (DESIGN.md §3), run one at a time by the workflow's main loop: hygiene
// (SPEC §11), appends with the in-loop and preflight checks (SPEC §7.6), compactions as child workflows, model
// switches (SPEC §4.6) and, in chat backend mode, the agent turn with its cache telemetry.
import {
  executeChild,
  proxyActivities,
  setCurrentDetails,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ConversationActivities } from '../activities/conversation.js';
import type { RespondActivities } from '../activities/respond.js';
import {
  ContextCompressor,
  gatewayHygieneDecision,
  HYGIENE_FAILURE_COOLDOWN_S,
  hygieneWarningThreshold,
  NOTICE_HYGIENE_FAILED,
  NOTICE_HYGIENE_WARNING,
  NOTICE_MODEL_SWITCH,
  type Usage,
} from '../engine/index.js';
import {
  type CompactionInput,
  type CompactionOutcome,
  type CompactionTimeouts,
  compactionWorkflow,
} from './compaction.js';
import { accountCacheUsage, failedOutcome, noticeFor, resolveWindow } from './conversationRules.js';
import { buildStatus, type CarriedState, contextTokens, detailsText } from './conversationState.js';
import type {
  ChatTurnRequest,
  CompactionResult,
  CompactionTrigger,
  ConversationStatus,
  IncomingMessage,
  SubmitMessages,
  SwitchModelRequest,
  TurnResult,
} from './definitions.js';
import { compactionWorkflowId, newSessionId } from './ids.js';
import { CompactionCount, ContextTokens, ConversationId, Model, SessionId, TenantId } from './searchAttributes.js';

// Store activities retry until PostgreSQL answers again (no attempt limit): a conversation never fails or drops a
// message because the database was briefly away. Permanent errors are non-retryable ApplicationFailures.
const store = proxyActivities<ConversationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

// The agent turn: transient provider errors retry (429 honours retry-after through nextRetryDelay); permanent ones
// (auth, bad request, context too long) are non-retryable and reach the client as the update's error.
const model = proxyActivities<RespondActivities>({
  startToCloseTimeout: '6 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});

const MAX_NOTICES = 20;

const neverSummarize = async (): Promise<string> => {
  throw new Error('the summarizer runs in the summarize activity, never in workflow code');
};

export class ConversationEntity {
  engine: ContextCompressor;
  private readonly seen: Set<string>;

  constructor(
    private readonly ids: { tenantId: string; conversationId: string; source: string },
    readonly state: CarriedState,
    private readonly options: { timeouts: CompactionTimeouts; maxSeenKeys: number; pendingItems: () => number },
  ) {
    this.engine = this.buildEngine();
    this.seen = new Set(state.seenKeys);
  }

  private buildEngine(): ContextCompressor {
    const s = this.state;
    return new ContextCompressor({
      model: s.model,
      contextLength: s.contextLength,
      provider: s.provider ?? undefined,
      config: s.config,
      summarize: neverSummarize,
      state: s.compressor,
    });
  }

  /** The state to carry through continue-as-new. */
  carry(): CarriedState {
    this.state.compressor = this.engine.exportState();
    return this.state;
  }

  notice(text: string): void {
    const notices = this.state.notices;
    notices.push(text);
    if (notices.length > MAX_NOTICES) notices.splice(0, notices.length - MAX_NOTICES);
  }

  status(): ConversationStatus {
    return buildStatus(this.ids, this.state, this.engine, this.options.pendingItems());
  }

  /** Search attributes and current details for the Temporal UI (DESIGN.md §3). */
  publish(): void {
    const status = this.status();
    upsertSearchAttributes([
      { key: TenantId, value: this.ids.tenantId },
      { key: ConversationId, value: this.ids.conversationId },
      { key: SessionId, value: this.state.sessionId },
      { key: Model, value: this.state.model },
      { key: CompactionCount, value: status.compressionCount },
      { key: ContextTokens, value: status.contextTokens },
    ]);
    setCurrentDetails(detailsText(this.ids, status));
  }

  /** A replayed summary became live (SPEC §13.7): only the compaction still in the transcript may set it. */
  summaryReplaced(compactionId: string, summaryBody: string): void {
    if (compactionId === this.state.lastCommittedCompactionId) this.engine.previousSummary = summaryBody;
  }

  private remember(key: string): void {
    this.seen.add(key);
    const keys = this.state.seenKeys;
    keys.push(key);
    if (keys.length > this.options.maxSeenKeys) {
      for (const old of keys.splice(0, keys.length - this.options.maxSeenKeys)) this.seen.delete(old);
    }
  }

  private async refreshPolicy(version: number): Promise<void> {
    if (version === this.state.policyVersion) return;
    const fresh = await store.loadTenantConfig({ tenantId: this.ids.tenantId });
    this.state.compressor = this.engine.exportState();
    this.state.config = fresh.config;
    this.state.policyVersion = fresh.policyVersion;
    this.engine = this.buildEngine();
  }

  async compact(
    trigger: CompactionTrigger,
    options: { force?: boolean; focusTopic?: string | null } = {},
  ): Promise<CompactionResult> {
    const { state, engine, ids } = this;
    engine.beginCompaction({ force: options.force === true });
    state.compactionSeq += 1;
    const seq = state.compactionSeq;
    const inPlace = trigger === 'hygiene' ? true : state.config.inPlace;
    const childInput: CompactionInput = {
      tenantId: ids.tenantId,
      conversationId: ids.conversationId,
      sessionId: state.sessionId,
      compactionId: uuid4(),
      seq,
      trigger,
      inPlace,
      newSessionId: inPlace ? null : newSessionId(Date.now(), uuid4().replace(/-/g, '')),
      focusTopic: options.focusTopic ?? null,
      previousSummary: engine.exportState().previousSummary,
      summaryAllowed: !engine.summaryCooldownActive(),
      abortOnSummaryFailure: state.config.abortOnSummaryFailure,
      requireSmaller: trigger === 'hygiene',
      platform: ids.source,
      limits: {
        protectFirstN: state.config.protectFirstN,
        protectLastN: state.config.protectLastN,
        minTailUserMessages: state.config.minTailUserMessages,
        tailTokenBudget: engine.tailTokenBudget,
      },
      contextLength: state.contextLength,
      timeouts: this.options.timeouts,
    };
    let outcome: CompactionOutcome;
    try {
      outcome = await executeChild(compactionWorkflow, {
        args: [childInput],
        workflowId: compactionWorkflowId(ids.tenantId, state.sessionId, seq),
        taskQueue: workflowInfo().taskQueue,
        staticSummary: `Compaction #${seq} (${trigger}) of ${ids.tenantId}/${ids.conversationId}`,
        typedSearchAttributes: [
          { key: TenantId, value: ids.tenantId },
          { key: ConversationId, value: ids.conversationId },
          { key: SessionId, value: state.sessionId },
          { key: Model, value: state.model },
        ],
      });
    } catch (err) {
      // The child failed as a whole (e.g. its record could not be written): the transcript is untouched (§7.6).
      outcome = failedOutcome(childInput.compactionId, state.sessionId, err);
    }
    this.applyOutcome(outcome);
    const result: CompactionResult = {
      compactionId: outcome.compactionId,
      trigger,
      status: outcome.status,
      notice: noticeFor(outcome),
      noopReason: outcome.noopReason,
      sessionId: state.sessionId,
      stats: outcome.stats,
      error: outcome.error,
    };
    state.lastCompaction = result;
    if (result.notice && trigger !== 'manual') this.notice(result.notice);
    this.publish();
    return result;
  }

  private applyOutcome(outcome: CompactionOutcome): void {
    const { state, engine } = this;
    const tokensBefore = outcome.stats?.tokensBefore ?? state.activeTokens;
    switch (outcome.status) {
      case 'committed':
      case 'fallback':
        engine.recordCompaction({
          summaryBody: outcome.summaryBody ?? '',
          fallbackUsed: outcome.status === 'fallback',
          summarizerCalled: outcome.summarizerCalled,
          stats: outcome.stats ?? undefined,
        });
        state.sessionId = outcome.sessionId;
        state.lastCommittedCompactionId = outcome.compactionId;
        if (outcome.activeMessages !== null && outcome.activeMessages >= 0)
          state.activeMessages = outcome.activeMessages;
        if (outcome.activeTokens !== null) state.activeTokens = outcome.activeTokens;
        state.tokensSinceReading = 0;
        // The cached prefix beyond the system prompt is gone (SPEC §12.3): measure how it comes back.
        state.cache.watching = { compactionId: outcome.compactionId, turnsSince: 0, rewriteTokens: null };
        break;
      case 'noop':
        engine.recordNoop(outcome.noopReason as never, tokensBefore);
        break;
      case 'aborted':
        engine.recordAbort(outcome.summarizerCalled, tokensBefore);
        break;
      default:
        // rejected (hygiene result not smaller) or failed commit: the transcript and previousSummary stay (§7.6).
        break;
    }
  }

  /** SPEC §11: the safety net before the agent turn of an incoming user message. Returns whether it compacted. */
  private async hygiene(): Promise<boolean> {
    const { state, engine } = this;
    if (!state.config.enabled) return false;
    if (state.hygieneCooldownUntil !== null && Date.now() < state.hygieneCooldownUntil) return false;
    const decision = gatewayHygieneDecision({
      historyLength: state.activeMessages,
      historyTokens: state.activeTokens,
      contextLength: state.contextLength,
      lastPromptTokens: engine.exportState().lastPromptTokens,
      enabled: state.config.enabled,
      hardMessageLimit: state.config.hygieneHardMessageLimit,
    });
    if (!decision.run) return false;
    const result = await this.compact('hygiene');
    const adopted = result.status === 'committed' || result.status === 'fallback';
    if (!adopted) {
      state.hygieneCooldownUntil = Date.now() + HYGIENE_FAILURE_COOLDOWN_S * 1000;
      if (result.status !== 'noop') this.notice(NOTICE_HYGIENE_FAILED);
    }
    const after = adopted ? state.activeTokens : decision.tokens;
    if (after >= hygieneWarningThreshold(state.contextLength)) this.notice(NOTICE_HYGIENE_WARNING);
    return adopted;
  }

  /** Hygiene, append (duplicates ignored), then the post-response or preflight check. */
  async submit(batch: SubmitMessages, options: { turnFollows?: boolean } = {}): Promise<void> {
    const { state } = this;
    const fresh: IncomingMessage[] = [];
    const inBatch = new Set<string>();
    for (const item of batch.messages) {
      if (this.seen.has(item.idempotencyKey) || inBatch.has(item.idempotencyKey)) continue;
      inBatch.add(item.idempotencyKey);
      fresh.push(item);
    }
    const hasUser = fresh.some((m) => m.message.role === 'user');
    const compactedByHygiene = hasUser ? await this.hygiene() : false;

    if (fresh.length > 0) {
      const appended = await store.appendMessages({
        tenantId: this.ids.tenantId,
        sessionId: state.sessionId,
        items: fresh,
      });
      const estimates = new Map(appended.estimates.map((a) => [a.idempotencyKey, a.tokenEstimate]));
      for (const item of fresh) this.remember(item.idempotencyKey);
      // Totals come from the store, so they are exact even when a retried append found its rows already there.
      state.activeMessages = appended.activeMessages;
      state.activeTokens = appended.activeTokens;
      // Messages after the response that produced the last reading count on top of it (§7.6); with a new usage
      // reading, only the reported assistant message and what follows it.
      const usageIndex = batch.usage ? lastAssistantIndex(fresh) : -1;
      let since = 0;
      fresh.forEach((item, i) => {
        if (!batch.usage || i >= usageIndex) since += estimates.get(item.idempotencyKey) ?? 0;
      });
      state.tokensSinceReading = batch.usage ? since : state.tokensSinceReading + since;
      await this.refreshPolicy(appended.policyVersion);
    }

    if (batch.usage) {
      await this.afterResponse(batch.usage);
    } else if ((hasUser || options.turnFollows) && !compactedByHygiene && state.config.enabled) {
      // Preflight (§7.6) before the model call that answers this message.
      if (this.engine.shouldCompress(contextTokens(state, this.engine))) await this.compact('preflight');
    }
    state.processedBatches += 1;
    this.publish();
  }

  /** Post-response (§7.6): record the reading; at most one automatic compaction before the next call. */
  private async afterResponse(usage: Usage): Promise<CompactionResult | null> {
    this.engine.updateFromResponse(usage);
    if (this.state.config.enabled && this.engine.shouldCompress()) return this.compact('post_response');
    return null;
  }

  /** Chat backend mode: append the client's messages, run the model, store the reply and its usage. */
  async chatTurn(request: ChatTurnRequest): Promise<TurnResult> {
    const { state, ids } = this;
    await this.submit({ messages: request.messages }, { turnFollows: true });
    state.turnSeq += 1;
    const turnKey = `turn:${ids.conversationId}:${state.turnSeq}`;
    const result = await model.respond({
      tenantId: ids.tenantId,
      conversationId: ids.conversationId,
      sessionId: state.sessionId,
      model: state.model,
      provider: state.provider,
      turnKey,
      tools: request.tools ?? null,
      afterCompactionId: state.cache.watching?.compactionId ?? null,
    });
    this.remember(turnKey);
    state.activeMessages = result.activeMessages;
    state.activeTokens = result.activeTokens;
    state.tokensSinceReading = result.tokenEstimate;
    await this.recordCacheUsage(result.usage);
    const compaction = await this.afterResponse(result.usage);
    this.publish();
    return {
      reply: result.message,
      toolCalls: result.message.tool_calls ?? [],
      finishReason: result.finishReason,
      usage: result.usage,
      compaction,
      status: this.status(),
    };
  }

  /** Cache economics per turn, and per compaction: rewrite on the first request after it, turns until reads recover. */
  private async recordCacheUsage(usage: TurnResult['usage']): Promise<void> {
    const recovery = accountCacheUsage(this.state.cache, usage);
    if (recovery) await model.recordCacheRecovery({ tenantId: this.ids.tenantId, ...recovery });
  }

  /** SPEC §4.6: re-derive from the raw configuration; never silent about the cache. */
  async switchModel(request: SwitchModelRequest): Promise<ConversationStatus> {
    const { state } = this;
    const provider = request.provider === undefined ? state.provider : request.provider;
    const contextLength = resolveWindow(request.model, provider, request.contextLength ?? null);
    const changed = request.model !== state.model || provider !== state.provider;
    this.engine.updateModel(request.model, contextLength, provider ?? undefined);
    Object.assign(state, { model: request.model, provider, contextLength });
    if (changed) this.notice(NOTICE_MODEL_SWITCH);
    await this.autoraiseNotice();
    this.publish();
    return this.status();
  }

  /** SPEC §4.5: the one-time gpt-5.5 Codex notice, persisted per tenant by the activity. */
  async autoraiseNotice(): Promise<void> {
    const text = await store.autoraiseNotice({
      tenantId: this.ids.tenantId,
      model: this.state.model,
      provider: this.state.provider,
      contextLength: this.state.contextLength,
      config: this.state.config,
    });
    if (text) this.notice(text);
  }
}

function lastAssistantIndex(items: IncomingMessage[]): number {
  for (let i = items.length - 1; i >= 0; i--) if (items[i]!.message.role === 'assistant') return i;
  return 0;
}
