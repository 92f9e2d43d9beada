// The conversation entity workflow (DESIGN.md §3): one per conversation, ID `conv:<tenant>:<conversation>`.
// Handlers only validate and enqueue; one main loop drains the queue in order. On each incoming user message the
// gateway hygiene pre-step (SPEC §11) runs first; after each reported usage the in-loop check (SPEC §7.6) runs.
// The compressor state lives here (plain JSON through continue-as-new); transcripts stay in PostgreSQL.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  Trigger,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ConversationActivities, TenantConfig } from '../activities/conversation.js';
import {
  type CompressionConfig,
  type CompressorState,
  ContextCompressor,
  checkMinimumContextLength,
  gatewayHygieneDecision,
  HYGIENE_FAILURE_COOLDOWN_S,
  hygieneWarningThreshold,
  NOTICE_ABORT,
  NOTICE_FALLBACK,
  NOTICE_HYGIENE_FAILED,
  NOTICE_HYGIENE_WARNING,
  NOTICE_MODEL_SWITCH,
  NOTICE_NOOP_NO_WINDOW,
  NOTICE_NOOP_SHORT,
  normalizeCompressorState,
  resolveContextLength,
  type Usage,
} from '../engine/index.js';
import {
  type CompactionInput,
  type CompactionOutcome,
  type CompactionTimeouts,
  compactionWorkflow,
  DEFAULT_COMPACTION_TIMEOUTS,
} from './compaction.js';
import {
  type CompactionResult,
  type CompactionTrigger,
  type CompactRequest,
  type ConversationStatus,
  compactUpdate,
  type IncomingMessage,
  type SubmitMessages,
  type SwitchModelRequest,
  statusQuery,
  submitMessagesSignal,
  summaryReplacedSignal,
  switchModelUpdate,
  syncUpdate,
} from './definitions.js';
import { compactionWorkflowId, newSessionId } from './ids.js';
import { CompactionCount, ContextTokens, ConversationId, Model, SessionId, TenantId } from './searchAttributes.js';
import { validateSubmit } from './validation.js';

export interface ConversationInput {
  tenantId: string;
  conversationId: string;
  model: string;
  provider?: string | null;
  /** Explicit window (model.context_length); otherwise resolved from the registry (SPEC §4.1). */
  contextLength?: number | null;
  source?: string;
  title?: string | null;
  /** Test and operations knobs; defaults are the spec's. */
  timeouts?: Partial<CompactionTimeouts>;
  /** Bound of the idempotency-key memory carried through continue-as-new. */
  maxSeenKeys?: number;
  /** Present after continue-as-new. */
  carried?: CarriedState;
}

/** The compact state carried through continue-as-new (DESIGN.md §3). */
export interface CarriedState {
  sessionId: string;
  config: CompressionConfig;
  policyVersion: number;
  compressor: CompressorState;
  seenKeys: string[];
  compactionSeq: number;
  activeMessages: number;
  activeTokens: number;
  tokensSinceReading: number;
  hygieneCooldownUntil: number | null;
  contextLength: number;
  model: string;
  provider: string | null;
  processedBatches: number;
  lastCompaction: CompactionResult | null;
  notices: string[];
  lastCommittedCompactionId: string | null;
  runs: number;
}

type QueueItem =
  | { kind: 'submit'; batch: SubmitMessages }
  | { kind: 'compact'; request: CompactRequest; done: Trigger<CompactionResult> }
  | { kind: 'switchModel'; request: SwitchModelRequest; done: Trigger<ConversationStatus> }
  | { kind: 'sync'; done: Trigger<ConversationStatus> };

// Store activities retry until PostgreSQL answers again (no attempt limit): a conversation never fails or drops a
// message because the database was briefly away. Permanent errors are non-retryable ApplicationFailures.
const acts = proxyActivities<ConversationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

const MAX_NOTICES = 20;

const never = async (): Promise<string> => {
  throw new Error('the summarizer runs in the summarize activity, never in workflow code');
};

function noticeFor(outcome: CompactionOutcome): string | null {
  if (outcome.status === 'noop') {
    return outcome.noopReason === 'insufficient_messages' ? NOTICE_NOOP_SHORT : NOTICE_NOOP_NO_WINDOW;
  }
  if (outcome.status === 'aborted') return NOTICE_ABORT;
  if (outcome.status === 'fallback') return NOTICE_FALLBACK;
  return null;
}

export async function conversationWorkflow(input: ConversationInput): Promise<void> {
  const { tenantId, conversationId } = input;
  const timeouts: CompactionTimeouts = { ...DEFAULT_COMPACTION_TIMEOUTS, ...input.timeouts };
  const maxSeenKeys = input.maxSeenKeys ?? 5_000;
  const queue: QueueItem[] = [];
  // Handlers are registered before the first await, so messages and updates sent with the start are accepted.
  let ready = false;
  let state!: CarriedState;
  let engine!: ContextCompressor;
  const earlyNotices: string[] = [];

  setHandler(submitMessagesSignal, (batch) => {
    // Invalid batches are refused by the client before they are sent; a malformed one reaching the workflow is
    // reported in the notices rather than silently dropped.
    const problem = validateSubmit(batch);
    if (problem) notice(`Rejected a message batch: ${problem}`);
    else queue.push({ kind: 'submit', batch });
  });
  setHandler(summaryReplacedSignal, ({ compactionId, summaryBody }) => {
    // Only the summary of the compaction that is still live in the transcript may become previousSummary.
    if (ready && compactionId === state.lastCommittedCompactionId) engine.previousSummary = summaryBody;
  });
  setHandler(
    compactUpdate,
    async (request) => {
      const done = new Trigger<CompactionResult>();
      queue.push({ kind: 'compact', request, done });
      return done;
    },
    {
      validator: (request) => {
        if (request?.focusTopic !== undefined && typeof request.focusTopic !== 'string') {
          throw new Error('focusTopic must be a string');
        }
      },
    },
  );
  setHandler(
    switchModelUpdate,
    async (request) => {
      const done = new Trigger<ConversationStatus>();
      queue.push({ kind: 'switchModel', request, done });
      return done;
    },
    {
      validator: (request) => {
        if (!request || typeof request.model !== 'string' || request.model.trim() === '') {
          throw new Error('model must be a non-empty string');
        }
        const provider =
          request.provider === undefined ? (ready ? state.provider : (input.provider ?? null)) : request.provider;
        resolveWindow(request.model, provider, request.contextLength ?? null);
      },
    },
  );
  setHandler(syncUpdate, async () => {
    const done = new Trigger<ConversationStatus>();
    queue.push({ kind: 'sync', done });
    return done;
  });
  setHandler(statusQuery, () => (ready ? status() : startingStatus()));

  if (input.carried) {
    state = input.carried;
  } else {
    const model = input.model;
    const provider = input.provider ?? null;
    const contextLength = resolveWindow(model, provider, input.contextLength ?? null);
    const opened = await acts.openConversation({
      tenantId,
      conversationId,
      proposedSessionId: newSessionId(Date.now(), uuid4().replace(/-/g, '')),
      model,
      provider,
      source: input.source ?? 'api',
      title: input.title ?? null,
    });
    state = {
      sessionId: opened.sessionId,
      config: opened.config,
      policyVersion: opened.policyVersion,
      compressor: normalizeCompressorState({ previousSummary: opened.previousSummary }),
      seenKeys: [],
      compactionSeq: 0,
      activeMessages: opened.activeMessages,
      activeTokens: opened.activeTokens,
      tokensSinceReading: 0,
      hygieneCooldownUntil: null,
      contextLength,
      model,
      provider,
      processedBatches: 0,
      lastCompaction: null,
      notices: [],
      lastCommittedCompactionId: null,
      runs: 0,
    };
  }
  const seen = new Set(state.seenKeys);
  engine = buildEngine(state);
  ready = true;
  for (const text of earlyNotices.splice(0)) notice(text);

  function buildEngine(s: CarriedState): ContextCompressor {
    return new ContextCompressor({
      model: s.model,
      contextLength: s.contextLength,
      provider: s.provider ?? undefined,
      config: s.config,
      summarize: never,
      state: s.compressor,
    });
  }

  function resolveWindow(model: string, provider: string | null, explicit: number | null): number {
    try {
      const { contextLength } = resolveContextLength({
        model,
        provider: provider ?? undefined,
        explicitOverride: explicit,
      });
      checkMinimumContextLength(model, contextLength);
      return contextLength;
    } catch (err) {
      throw ApplicationFailure.nonRetryable((err as Error).message, 'InvalidModel');
    }
  }

  function notice(text: string): void {
    if (!ready) {
      earlyNotices.push(text);
      return;
    }
    state.notices.push(text);
    if (state.notices.length > MAX_NOTICES) state.notices.splice(0, state.notices.length - MAX_NOTICES);
  }

  function contextTokens(): number {
    const last = engine.exportState().lastPromptTokens;
    return last > 0 ? last + state.tokensSinceReading : state.activeTokens;
  }

  function iso(ms: number | null): string | null {
    return ms === null ? null : new Date(ms).toISOString();
  }

  function startingStatus(): ConversationStatus {
    const contextLength = input.contextLength ?? 0;
    return {
      tenantId,
      conversationId,
      sessionId: '',
      model: input.model,
      provider: input.provider ?? null,
      contextLength,
      thresholdPercent: 0,
      thresholdTokens: 0,
      lastPromptTokens: 0,
      contextTokens: 0,
      usagePercent: 0,
      compressionCount: 0,
      activeMessages: 0,
      ineffectiveStrikes: 0,
      fallbackStreak: 0,
      blockedBy: null,
      trippedUntil: null,
      summaryCooldownUntil: null,
      structuralBackoffUntil: null,
      hygieneCooldownUntil: null,
      policyVersion: 0,
      pendingItems: queue.length,
      processedBatches: 0,
      lastCompaction: null,
      notices: earlyNotices.slice(),
    };
  }

  function status(): ConversationStatus {
    const s = engine.exportState();
    const engineStatus = engine.getStatus();
    const tokens = contextTokens();
    return {
      tenantId,
      conversationId,
      sessionId: state.sessionId,
      model: state.model,
      provider: state.provider,
      contextLength: state.contextLength,
      thresholdPercent: engine.thresholdPercent,
      thresholdTokens: engine.thresholdTokens,
      lastPromptTokens: engineStatus.last_prompt_tokens,
      contextTokens: tokens,
      usagePercent: state.contextLength ? Math.min(100, (tokens / state.contextLength) * 100) : 0,
      compressionCount: s.compressionCount,
      activeMessages: state.activeMessages,
      ineffectiveStrikes: s.ineffectiveStrikes,
      fallbackStreak: s.fallbackStreak,
      blockedBy: engine.blockingReason(),
      trippedUntil: iso(s.trippedUntil),
      summaryCooldownUntil: iso(s.summaryCooldownUntil),
      structuralBackoffUntil: iso(s.structuralBackoffUntil),
      hygieneCooldownUntil: iso(state.hygieneCooldownUntil),
      policyVersion: state.policyVersion,
      pendingItems: queue.length,
      processedBatches: state.processedBatches,
      lastCompaction: state.lastCompaction,
      notices: state.notices.slice(),
    };
  }

  function publish(): void {
    const s = engine.exportState();
    upsertSearchAttributes([
      { key: TenantId, value: tenantId },
      { key: ConversationId, value: conversationId },
      { key: SessionId, value: state.sessionId },
      { key: Model, value: state.model },
      { key: CompactionCount, value: s.compressionCount },
      { key: ContextTokens, value: contextTokens() },
    ]);
    const pct = state.contextLength ? ((contextTokens() / state.contextLength) * 100).toFixed(1) : '0';
    setCurrentDetails(
      [
        `**${tenantId} / ${conversationId}** — session \`${state.sessionId}\`, model \`${state.model}\``,
        `Context: ${contextTokens()} / ${state.contextLength} tokens (${pct} %), threshold ${engine.thresholdTokens}`,
        `Messages: ${state.activeMessages} active; compactions: ${s.compressionCount}` +
          (engine.blockingReason() ? `; automatic compaction blocked: ${engine.blockingReason()}` : ''),
        state.lastCompaction
          ? `Last compaction: ${state.lastCompaction.trigger} → ${state.lastCompaction.status}`
          : 'No compaction yet',
      ].join('\n'),
    );
  }

  async function refreshPolicy(version: number): Promise<void> {
    if (version === state.policyVersion) return;
    const fresh: TenantConfig = await acts.loadTenantConfig({ tenantId });
    state.compressor = engine.exportState();
    state.config = fresh.config;
    state.policyVersion = fresh.policyVersion;
    engine = buildEngine(state);
  }

  async function compact(
    trigger: CompactionTrigger,
    options: { force?: boolean; focusTopic?: string | null } = {},
  ): Promise<CompactionResult> {
    engine.beginCompaction({ force: options.force === true });
    state.compactionSeq += 1;
    const seq = state.compactionSeq;
    const inPlace = trigger === 'hygiene' ? true : state.config.inPlace;
    const before = engine.exportState();
    const childInput: CompactionInput = {
      tenantId,
      conversationId,
      sessionId: state.sessionId,
      compactionId: uuid4(),
      seq,
      trigger,
      inPlace,
      newSessionId: inPlace ? null : newSessionId(Date.now(), uuid4().replace(/-/g, '')),
      focusTopic: options.focusTopic ?? null,
      previousSummary: before.previousSummary,
      summaryAllowed: !engine.summaryCooldownActive(),
      abortOnSummaryFailure: state.config.abortOnSummaryFailure,
      requireSmaller: trigger === 'hygiene',
      platform: input.source ?? 'api',
      limits: {
        protectFirstN: state.config.protectFirstN,
        protectLastN: state.config.protectLastN,
        minTailUserMessages: state.config.minTailUserMessages,
        tailTokenBudget: engine.tailTokenBudget,
      },
      contextLength: state.contextLength,
      timeouts,
    };
    let outcome: CompactionOutcome;
    try {
      outcome = await executeChild(compactionWorkflow, {
        args: [childInput],
        workflowId: compactionWorkflowId(tenantId, state.sessionId, seq),
        taskQueue: workflowInfo().taskQueue,
        staticSummary: `Compaction #${seq} (${trigger}) of ${tenantId}/${conversationId}`,
        typedSearchAttributes: [
          { key: TenantId, value: tenantId },
          { key: ConversationId, value: conversationId },
          { key: SessionId, value: state.sessionId },
          { key: Model, value: state.model },
        ],
      });
    } catch (err) {
      // The child failed as a whole (e.g. its record could not be written): the transcript is untouched (§7.6).
      outcome = {
        compactionId: childInput.compactionId,
        status: 'failed',
        noopReason: null,
        sessionId: state.sessionId,
        summaryBody: null,
        fallbackUsed: false,
        summarizerCalled: false,
        failureClass: null,
        stats: null,
        activeMessages: null,
        activeTokens: null,
        error: err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err),
      };
    }
    applyOutcome(outcome);
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
    if (result.notice && trigger !== 'manual') notice(result.notice);
    publish();
    return result;
  }

  function applyOutcome(outcome: CompactionOutcome): void {
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

  /** SPEC §11: the safety net before the agent turn of an incoming user message. */
  async function hygiene(): Promise<boolean> {
    if (!state.config.enabled) return false;
    const now = Date.now();
    if (state.hygieneCooldownUntil !== null && now < state.hygieneCooldownUntil) return false;
    const decision = gatewayHygieneDecision({
      historyLength: state.activeMessages,
      historyTokens: state.activeTokens,
      contextLength: state.contextLength,
      lastPromptTokens: engine.exportState().lastPromptTokens,
      enabled: state.config.enabled,
      hardMessageLimit: state.config.hygieneHardMessageLimit,
    });
    if (!decision.run) return false;
    const result = await compact('hygiene');
    const adopted = result.status === 'committed' || result.status === 'fallback';
    if (!adopted) {
      state.hygieneCooldownUntil = Date.now() + HYGIENE_FAILURE_COOLDOWN_S * 1000;
      if (result.status !== 'noop') notice(NOTICE_HYGIENE_FAILED);
    }
    const after = adopted ? state.activeTokens : decision.tokens;
    if (after >= hygieneWarningThreshold(state.contextLength)) notice(NOTICE_HYGIENE_WARNING);
    return adopted;
  }

  async function processSubmit(batch: SubmitMessages): Promise<void> {
    const fresh: IncomingMessage[] = [];
    const inBatch = new Set<string>();
    for (const item of batch.messages) {
      if (seen.has(item.idempotencyKey) || inBatch.has(item.idempotencyKey)) continue;
      inBatch.add(item.idempotencyKey);
      fresh.push(item);
    }
    const hasUser = fresh.some((m) => m.message.role === 'user');
    let compactedThisCall = false;
    if (hasUser) compactedThisCall = await hygiene();

    if (fresh.length > 0) {
      const appended = await acts.appendMessages({ tenantId, sessionId: state.sessionId, items: fresh });
      const estimates = new Map(appended.estimates.map((a) => [a.idempotencyKey, a.tokenEstimate]));
      for (const item of fresh) remember(item.idempotencyKey);
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
      await refreshPolicy(appended.policyVersion);
    }

    if (batch.usage) {
      engine.updateFromResponse(batch.usage as Usage);
      // Post-response check (§7.6): at most one automatic compaction between two API calls.
      if (state.config.enabled && engine.shouldCompress()) await compact('post_response');
    } else if (hasUser && !compactedThisCall && state.config.enabled) {
      // Preflight (§7.6) before the turn that answers this message.
      if (engine.shouldCompress(contextTokens())) await compact('preflight');
    }
    state.processedBatches += 1;
    publish();
  }

  function lastAssistantIndex(items: IncomingMessage[]): number {
    for (let i = items.length - 1; i >= 0; i--) if (items[i]!.message.role === 'assistant') return i;
    return 0;
  }

  function remember(key: string): void {
    seen.add(key);
    state.seenKeys.push(key);
    if (state.seenKeys.length > maxSeenKeys) {
      for (const old of state.seenKeys.splice(0, state.seenKeys.length - maxSeenKeys)) seen.delete(old);
    }
  }

  async function switchModel(request: SwitchModelRequest): Promise<ConversationStatus> {
    const provider = request.provider === undefined ? state.provider : request.provider;
    const contextLength = resolveWindow(request.model, provider, request.contextLength ?? null);
    const changed = request.model !== state.model || provider !== state.provider;
    engine.updateModel(request.model, contextLength, provider ?? undefined);
    Object.assign(state, { model: request.model, provider, contextLength });
    if (changed) notice(NOTICE_MODEL_SWITCH);
    publish();
    return status();
  }

  publish();
  for (;;) {
    await condition(() => queue.length > 0 || workflowInfo().continueAsNewSuggested);
    const item = queue.shift();
    if (!item) {
      // Continue-as-new is suggested and the queue is drained: let running handlers finish, then re-check (a
      // signal may have arrived meanwhile; it is processed before the hand-over, never lost).
      await condition(allHandlersFinished);
      if (queue.length > 0) continue;
      break;
    }
    switch (item.kind) {
      case 'submit':
        await processSubmit(item.batch);
        break;
      case 'compact':
        item.done.resolve(await compact('manual', { force: true, focusTopic: item.request.focusTopic ?? null }));
        break;
      case 'switchModel':
        item.done.resolve(await switchModel(item.request));
        break;
      case 'sync':
        item.done.resolve(status());
        break;
    }
  }
  state.compressor = engine.exportState();
  state.runs += 1;
  await continueAsNew<typeof conversationWorkflow>({ ...input, carried: state });
}
