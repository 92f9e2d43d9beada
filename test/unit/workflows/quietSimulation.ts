// A conversation's decisions without a Temporal server, for the quiet-batch property test: the workflow's decision
// layer (ConversationEntity.apply and its compaction settlement, with the real pure pieces: ContextCompressor,
// gatewayHygieneDecision, applyOutcome, the brakes, absorbTotals/markApplied, the fold of quiet.ts) over a log that
// mirrors the conversations row (totals, batch and notification sequence numbers, published rules, fold), and a
// gateway that either notifies every batch (the reference) or only the loud ones (engine/quietBatches.ts).
import type { CompactionOutcome, CompactionStatus, CompactionTrigger } from '../../../contracts/compaction.js';
import type { CarriedState } from '../../../contracts/conversation.js';
import type { NotificationFold, StoredBatch } from '../../../contracts/conversationLog.js';
import {
  type CompressionConfig,
  ContextCompressor,
  foldQuiet,
  gatewayHygieneDecision,
  HYGIENE_FAILURE_COOLDOWN_S,
  isQuiet,
  normalizeCompressionConfig,
  normalizeHostPolicy,
  type QuietFold,
  type QuietRules,
} from '../../../engine/index.js';
import { conversationBreaker, pruneAutoTimes, reachedFixedPoint } from '../../../workflows/conversation/brakes.js';
import { applyOutcome } from '../../../workflows/conversation/outcome.js';
import { applyNotificationFold, quietRulesFor } from '../../../workflows/conversation/quiet.js';
import { absorbTotals, contextTokens, markApplied, openingState } from '../../../workflows/conversation/state.js';

/** user: ends with a user message; exchange: user + assistant (usage); assistant: a reply (usage); tool: an assistant
 * tool call and its result; answered: user + assistant without usage; reply-ask: a reply (usage), then the user. */
export type MessageKind = 'user' | 'exchange' | 'assistant' | 'tool' | 'answered' | 'reply-ask';
export type SimEvent =
  | { kind: 'batch'; message: MessageKind; rows: number; tokensPerRow: number; prompt: number | null }
  | { kind: 'manual' }
  | { kind: 'tick'; ms: number };
export interface SimOutcome {
  status: Extract<CompactionStatus, 'committed' | 'fallback' | 'noop' | 'aborted' | 'rejected' | 'failed'>;
  keep: number;
  similarity: number | null;
}

/** One compaction decided: where, why, and the brakes' state right after it was settled. */
export interface Decision {
  event: number;
  trigger: CompactionTrigger;
  tokens: number;
  status: CompactionStatus;
  strikes: number;
  fallbackStreak: number;
  trippedUntil: number | null;
  structuralBackoffUntil: number | null;
  summaryCooldownUntil: number | null;
  autoPaused: string | null;
}

const CONTEXT_LENGTH = 200_000;

export class SimConversation {
  readonly state: CarriedState;
  engine: ContextCompressor;
  readonly decisions: Decision[] = [];
  readonly log = { version: 0, batchSeq: 0, activeMessages: 0, activeTokens: 0, epoch: 0, appliedSeq: 0 };
  rules: QuietRules | null = null;
  fold: QuietFold | null = null;
  notified = 0;
  quiet = 0;
  private event = -1;
  private compactions = 0;

  constructor(
    private readonly clock: { now: number },
    private readonly outcomes: readonly SimOutcome[],
    private readonly quietGateway: boolean,
    configured: Partial<CompressionConfig> = {},
  ) {
    const config = normalizeCompressionConfig(configured);
    this.state = openingState({
      sessionId: 's1',
      config,
      host: normalizeHostPolicy({ background: false, maxAutoPerHour: 4 }),
      policyVersion: 0,
      cacheTtl: null,
      compactionSeq: 0,
      version: 0,
      activeMessages: 0,
      activeTokens: 0,
      batches: { appliedSeq: 0, ahead: [], latestSeq: 0 },
      contextLength: CONTEXT_LENGTH,
      model: 'test-model',
      provider: null,
      notifyEpoch: 0,
    });
    this.engine = new ContextCompressor({
      model: 'test-model',
      contextLength: CONTEXT_LENGTH,
      config,
      summarize: async () => 'never called',
      now: () => this.clock.now,
    });
    this.publish();
  }

  /** One event of the stream, as the gateway and the workflow see it. */
  step(index: number, event: SimEvent): void {
    this.event = index;
    if (event.kind === 'tick') {
      this.clock.now += event.ms;
      return;
    }
    if (event.kind === 'manual') {
      // The gateway opens a notification for the manual compaction; the workflow applies its fold first.
      applyNotificationFold(this.state, this.engine, this.notifyOpen());
      this.compact('manual');
      this.publish();
      return;
    }
    const batch = this.append(event);
    const rules = this.rules;
    if (
      this.quietGateway &&
      rules &&
      rules.epoch === this.log.epoch &&
      this.log.appliedSeq === (batch.seq ?? 0) - 1 &&
      isQuiet(rules, this.fold, batch)
    ) {
      this.fold = foldQuiet(this.fold, batch);
      this.log.appliedSeq = batch.seq ?? this.log.appliedSeq;
      this.quiet += 1;
      return;
    }
    this.apply({ ...batch, notification: this.notifyOpen() });
    this.publish();
  }

  /** Delivers what is still folded (as the next notification would) so that the final states compare. */
  flush(): void {
    applyNotificationFold(this.state, this.engine, this.notifyOpen());
  }

  private notifyOpen(): NotificationFold {
    this.notified += 1;
    this.log.epoch += 1;
    return { epoch: this.log.epoch, quiet: this.fold };
  }

  private publish(): void {
    this.rules = quietRulesFor(this.state, this.engine, false);
    const applied = this.state.batches.appliedSeq;
    this.log.appliedSeq = Math.max(this.log.appliedSeq, applied);
    if (this.fold && this.fold.toSeq <= applied) this.fold = null;
  }

  /** The append and its StoredBatch, as infra/db/conversationAppend.ts and workers/gateway/logView.ts build them. */
  private append(event: Extract<SimEvent, { kind: 'batch' }>): StoredBatch {
    const { rows, tokensPerRow } = event;
    const tokens = rows * tokensPerRow;
    const log = this.log;
    log.batchSeq += 1;
    log.version += 1;
    log.activeMessages += rows;
    log.activeTokens += tokens;
    const endsWithUser = event.message === 'user' || event.message === 'reply-ask';
    const hasAssistant = event.message !== 'user';
    const withUsage =
      (event.message === 'exchange' || event.message === 'assistant' || event.message === 'reply-ask') &&
      event.prompt !== null;
    // reply-ask: the reply is the first row, the user message the last.
    const incomingRows = event.message === 'reply-ask' ? Math.max(1, rows - 1) : rows;
    const usageTail = event.message === 'reply-ask' ? tokens : tokensPerRow;
    return {
      seq: log.batchSeq,
      latestSeq: log.batchSeq,
      version: log.version,
      activeMessages: log.activeMessages,
      activeTokens: log.activeTokens,
      sessionId: 's1',
      rows,
      tokens,
      incoming: endsWithUser
        ? { rowId: log.batchSeq * 10, rows: incomingRows, tokens: incomingRows * tokensPerRow }
        : null,
      users: event.message === 'tool' || event.message === 'assistant' ? 0 : 1,
      freshAssistant: hasAssistant,
      ...(withUsage
        ? {
            usage: {
              prompt_tokens: event.prompt as number,
              completion_tokens: 20,
              total_tokens: (event.prompt as number) + 20,
            },
            usageTailTokens: usageTail,
          }
        : {}),
    };
  }

  /** ConversationEntity.apply (blocking compactions: the rules are void while one runs in the background). */
  private apply(batch: StoredBatch): void {
    const { state } = this;
    applyNotificationFold(state, this.engine, batch.notification);
    absorbTotals(state, batch);
    if (batch.freshAssistant) state.autoSinceModelCall = false;
    if (batch.users > 0) {
      state.userSinceCompaction = true;
      if (state.autoPaused === 'fixed_point') state.autoPaused = null;
    }
    let compacted = false;
    if (batch.usage && batch.version > state.lastCommitVersion) {
      state.readingBaseTokens = batch.activeTokens - (batch.usageTailTokens ?? 0);
      this.engine.updateFromResponse(batch.usage);
      state.autoSinceModelCall = false;
      compacted = this.maybeCompact('post_response');
    }
    if (!compacted && batch.incoming) compacted = this.hygiene(batch.incoming);
    if (!compacted && !batch.usage && batch.incoming) {
      this.maybeCompact('preflight', contextTokens(state, this.engine));
    }
    if (batch.seq !== null) state.processedBatches += 1;
    markApplied(state.batches, batch.seq, batch.latestSeq);
  }

  private maybeCompact(trigger: 'post_response' | 'preflight', tokens?: number): boolean {
    const { state, engine } = this;
    if (!state.config.enabled || state.autoSinceModelCall) return false;
    const wouldRun = (tokens ?? engine.exportState().lastPromptTokens) >= engine.thresholdTokens;
    if (!wouldRun || engine.blockingReason() !== null || this.inLoopPaused()) return false;
    if (!engine.shouldCompress(tokens)) return false;
    this.compact(trigger);
    return true;
  }

  private inLoopPaused(): boolean {
    const { state } = this;
    if (state.autoPaused === 'fixed_point') return true;
    const breaker = conversationBreaker(state.host, pruneAutoTimes(state.autoTimes, this.clock.now));
    state.autoPaused = breaker ? breaker.pause : null;
    return breaker !== null;
  }

  private hygiene(incoming: NonNullable<StoredBatch['incoming']>): boolean {
    const { state, engine } = this;
    if (!state.config.enabled || state.autoSinceModelCall) return false;
    if (state.hygieneCooldownUntil !== null && this.clock.now < state.hygieneCooldownUntil) return false;
    const decision = gatewayHygieneDecision({
      historyLength: Math.max(0, state.activeMessages - incoming.rows),
      historyTokens: Math.max(0, state.activeTokens - incoming.tokens),
      contextLength: state.contextLength,
      lastPromptTokens: engine.exportState().lastPromptTokens,
      enabled: state.config.enabled,
      hardMessageLimit: state.config.hygieneHardMessageLimit,
    });
    if (!decision.run) return false;
    const status = this.compact('hygiene');
    if (status !== 'committed' && status !== 'fallback') {
      state.hygieneCooldownUntil = this.clock.now + HYGIENE_FAILURE_COOLDOWN_S * 1000;
    }
    return true;
  }

  /** A compaction with the next scripted outcome, settled as workflows/conversation/compact.ts settles it. */
  private compact(trigger: CompactionTrigger): CompactionStatus {
    const { state, engine, log } = this;
    const tokens = contextTokens(state, engine);
    engine.beginCompaction({ force: trigger === 'manual' });
    const script = this.outcomes[this.compactions++ % this.outcomes.length] as SimOutcome;
    const committed = script.status === 'committed' || script.status === 'fallback';
    if (committed) {
      // The commit's transcript swap bumps the version and the notification epoch (infra/db/conversations.ts).
      log.activeTokens = Math.floor(log.activeTokens * script.keep);
      log.activeMessages = Math.max(5, Math.floor(log.activeMessages * script.keep));
      log.version += 1;
      log.epoch += 1;
    }
    const outcome: CompactionOutcome = {
      compactionId: `c${this.compactions}`,
      status: script.status,
      noopReason: script.status === 'noop' ? 'nothing_to_compact' : null,
      sessionId: 's1',
      fallbackUsed: script.status === 'fallback',
      summarizerCalled: script.status !== 'noop',
      failureClass: null,
      stats: null,
      totals: committed
        ? { version: log.version, activeMessages: log.activeMessages, activeTokens: log.activeTokens }
        : null,
      similarity: script.similarity,
      error: null,
    };
    const automatic = trigger !== 'manual';
    if (committed && automatic && reachedFixedPoint(state.host, outcome.similarity, state.userSinceCompaction)) {
      state.autoPaused = 'fixed_point';
    }
    applyOutcome(state, engine, outcome, { automatic, now: this.clock.now });
    const s = engine.exportState();
    this.decisions.push({
      event: this.event,
      trigger,
      tokens,
      status: script.status,
      strikes: s.ineffectiveStrikes,
      fallbackStreak: s.fallbackStreak,
      trippedUntil: s.trippedUntil,
      structuralBackoffUntil: s.structuralBackoffUntil,
      summaryCooldownUntil: s.summaryCooldownUntil,
      autoPaused: state.autoPaused,
    });
    return script.status;
  }
}
