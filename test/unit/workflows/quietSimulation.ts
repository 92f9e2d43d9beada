// A conversation's decisions without a Temporal server, for the quiet-batch property test: the workflow's decision
// layer (ConversationEntity.apply, its background compactions and their settlement, with the real pure pieces:
// ContextCompressor, gatewayHygieneDecision, applyOutcome, the brakes, absorbTotals/markApplied, the fold of
// quiet.ts) over a log that mirrors the conversations row (totals, batch and notification sequence numbers, published
// rules, fold), and a gateway that either notifies every batch (the reference) or only the loud ones
// (engine/quietBatches.ts). An automatic compaction runs in the background across a scripted number of events, as
// SPEC §19 `background` runs it; blocking ones (manual, hygiene) settle at once.
import type { CompactionOutcome, CompactionStatus, CompactionTrigger } from '../../../contracts/compaction.js';
import type { CacheRecovery, CarriedState } from '../../../contracts/conversation.js';
import type { NotificationFold, StoredBatch } from '../../../contracts/conversationLog.js';
import {
  type CompressionConfig,
  ContextCompressor,
  foldQuiet,
  gatewayHygieneDecision,
  HYGIENE_FAILURE_COOLDOWN_S,
  isQuiet,
  type NotifiedSince,
  normalizeCompressionConfig,
  normalizeHostPolicy,
  notifiedAfter,
  type QuietFold,
  type QuietRules,
  type RulesStanding,
  type TurnUsage,
  turnRunsWithoutWorkflow,
} from '../../../engine/index.js';
import { conversationBreaker, pruneAutoTimes, reachedFixedPoint } from '../../../workflows/conversation/brakes.js';
import { accountCacheUsage, recoveryCompletedBy } from '../../../workflows/conversation/cacheTelemetry.js';
import { applyOutcome } from '../../../workflows/conversation/outcome.js';
import { applyNotificationFold, quietRulesFor } from '../../../workflows/conversation/quiet.js';
import {
  absorbTotals,
  contextTokens,
  coveredBefore,
  hygieneHistory,
  markApplied,
  openingState,
  recordNativeCheckpoint,
} from '../../../workflows/conversation/state.js';

/** user: ends with a user message; exchange: user + assistant (usage); assistant: a reply (usage); tool: an assistant
 * tool call and its result; answered: user + assistant without usage; reply-ask: a reply (usage), then the user. */
export type MessageKind = 'user' | 'exchange' | 'assistant' | 'tool' | 'answered' | 'reply-ask';
/** turn: a chat turn of chat backend mode (a user message or a tool round's result, then the model's reply with its
 * usage and cache reads). */
export type SimEvent =
  | { kind: 'batch'; message: MessageKind; rows: number; tokensPerRow: number; prompt: number | null }
  | {
      kind: 'turn';
      asks: 'user' | 'tool';
      userTokens: number;
      replyTokens: number;
      prompt: number;
      cacheRead: number;
      /** The reply came with a native checkpoint (SPEC §15.1): its reading is no verdict. */
      checkpoint?: boolean;
    }
  | { kind: 'manual' }
  | { kind: 'tick'; ms: number };
export interface SimOutcome {
  status: Extract<CompactionStatus, 'committed' | 'fallback' | 'noop' | 'aborted' | 'rejected' | 'failed'>;
  keep: number;
  similarity: number | null;
  /** A background compaction: the events that arrive while it runs (absent: 0, it settles before the next one). */
  events?: number;
  /** Of those, how many arrive after its commit, before it is settled (absent: 0, it commits as it settles). */
  commitLead?: number;
}

/** A background compaction the simulated workflow started (BackgroundCompactions). */
interface Running {
  trigger: Exclude<CompactionTrigger, 'manual' | 'hygiene'>;
  event: number;
  tokens: number;
  script: SimOutcome;
  /** The stream event before which it has finished and is settled. */
  settleAt: number;
  /** The stream event before which its commit lands (≤ settleAt), and the child's outcome once it has. */
  commitAt: number;
  outcome: CompactionOutcome | null;
}

/** One compaction decided: where, why, and the brakes' state right after it was settled. */
export interface Decision {
  event: number;
  /** The event at which it was settled (a background compaction: later; after the stream: AFTER_STREAM). */
  settledAt: number;
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
/** `settledAt` of a compaction that was still running when the stream ended. */
export const AFTER_STREAM = Number.MAX_SAFE_INTEGER;

export class SimConversation {
  readonly state: CarriedState;
  engine: ContextCompressor;
  readonly decisions: Decision[] = [];
  readonly log = { version: 0, batchSeq: 0, activeMessages: 0, activeTokens: 0, epoch: 0, appliedSeq: 0 };
  rules: QuietRules | null = null;
  fold: QuietFold | null = null;
  notified = 0;
  quiet = 0;
  /** Chat turns the gateway ran: their user batch was quiet, or notified first (unwaited). */
  direct = 0;
  unwaitedTurns = 0;
  /** Of those, the ones judged while the workflow was behind (by what was notified since its rules). */
  unwaitedStale = 0;
  /** Notifications the workflow has not worked off yet (quiet gateway only). */
  private readonly pending: Array<{ batch: StoredBatch; event: number; guarded: boolean }> = [];
  /** The workflow works off each notification as it arrives (else they wait for the next delivery). */
  private keepsUp = true;
  /** What was notified since the rules (migration 0011's `notified_since`). */
  private since: NotifiedSince | null = null;
  /**
   * Hygiene compactions decided on the batch of a turn the gateway ran unwaited, or on a batch notified before it
   * and worked off after it was judged: must never happen.
   */
  unwaitedHygiene = 0;
  private event = -1;
  private compactions = 0;
  private running: Running | null = null;
  /** Background compactions started, and batches folded while one ran (coverage of the property test). */
  backgroundStarted = 0;
  quietWhileCompacting = 0;
  /** Of those, batches folded after the compaction's commit, before its settlement. */
  quietAfterCommit = 0;
  /** Of those, readings at or over the threshold (QuietRules.overQuiet). */
  quietOverThreshold = 0;
  /** Cache recoveries the workflow recorded, in order, and those the gateway wrote for quiet replies. */
  readonly recoveries: CacheRecovery[] = [];
  readonly gatewayRecoveries: CacheRecovery[] = [];
  /** The cache telemetry of the last publication (the status the gateway reads). */
  private publishedCache: CarriedState['cache'] | null = null;

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
      // Background compaction on (chat turns may run in the gateway, automatic compactions run in the background).
      host: normalizeHostPolicy({ background: true, maxAutoPerHour: 4 }),
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

  /**
   * One event of the stream, as the gateway and the workflow see it. `delivers`: with the quiet gateway, the
   * workflow works off the notifications still pending first (else they stay pending, as when the workflow is behind
   * and its rules are not current; time passing, manual compactions and turns it runs always find them delivered).
   */
  step(index: number, event: SimEvent, delivers = true): void {
    this.keepsUp = delivers;
    if (delivers || event.kind === 'tick' || event.kind === 'manual') this.deliver();
    // The workflow's main loop settles a finished background compaction before the next notification it works off.
    const running = this.running;
    if (running && !running.outcome && index >= running.commitAt) {
      running.outcome = this.commitOf(running.script, { background: true });
    }
    if (running && index >= running.settleAt) {
      this.settleRunning(index);
      this.publish();
    }
    this.event = index;
    if (event.kind === 'tick') {
      this.clock.now += event.ms;
      return;
    }
    if (event.kind === 'manual') {
      // The gateway opens a notification for the manual compaction (what was notified since the rules becomes
      // unknown); the workflow applies its fold first.
      this.since = null;
      this.applyFold(this.notifyOpen());
      this.compact('manual');
      this.publish();
      return;
    }
    if (event.kind === 'turn') {
      this.turn(event);
      return;
    }
    const batch = this.append(event);
    if (this.foldIfQuiet(batch)) return;
    this.notify(batch);
  }

  /** Where the log stands for a batch (infra/db/quietBatches.ts): current rules, or what was notified since. */
  private standing(batch: StoredBatch): RulesStanding {
    const rules = this.rules;
    const current = rules !== null && rules.epoch === this.log.epoch && this.log.appliedSeq === (batch.seq ?? 0) - 1;
    return current ? { current } : { current, since: this.since };
  }

  /** A batch that is not quiet: notified (the workflow applies it in order), what was notified since tracked. */
  private notify(batch: StoredBatch, options: { unwaited?: boolean; untracked?: boolean } = {}): void {
    if (!this.quietGateway) {
      this.apply({ ...batch, notification: this.notifyOpen() });
      this.publish();
      return;
    }
    this.since = options.untracked ? null : notifiedAfter(this.rules, this.fold, batch, this.standing(batch));
    const notified = { ...batch, notification: this.notifyOpen() };
    if (options.unwaited) {
      // The turn's model call does not wait for these: no hygiene may be decided on any of them.
      for (const item of this.pending) item.guarded = true;
    }
    this.pending.push({ batch: notified, event: this.event, guarded: options.unwaited === true });
    if (this.keepsUp) this.deliver();
  }

  /** The workflow works off its pending notifications, in order, publishing after each. */
  private deliver(): void {
    for (const item of this.pending.splice(0)) {
      this.event = item.event;
      const hygieneBefore = this.decisions.filter((d) => d.trigger === 'hygiene').length;
      this.apply(item.batch);
      this.publish();
      if (item.guarded) {
        this.unwaitedHygiene += this.decisions.filter((d) => d.trigger === 'hygiene').length - hygieneBefore;
      }
    }
  }

  /** The gateway's verdict (infra/db/quietBatches.ts): a quiet batch is folded and counted as applied. */
  private foldIfQuiet(batch: StoredBatch, options: { turnFollows?: boolean } = {}): boolean {
    const rules = this.rules;
    if (!this.quietGateway || !rules || !this.standing(batch).current || !isQuiet(rules, this.fold, batch, options)) {
      return false;
    }
    this.fold = foldQuiet(this.fold, batch);
    this.log.appliedSeq = batch.seq ?? this.log.appliedSeq;
    this.quiet += 1;
    if (rules.compacting === true) this.quietWhileCompacting += 1;
    if (rules.compacting === true && this.running?.outcome?.totals) this.quietAfterCommit += 1;
    if ((batch.usage?.prompt_tokens ?? 0) >= rules.thresholdTokens) this.quietOverThreshold += 1;
    return true;
  }

  /**
   * A chat turn: run by the gateway when its user batch is quiet, or when it may be notified first and not waited
   * for (workers/gateway/chatTurns.ts: the reply's batch is judged like any other); else by the workflow
   * (ConversationEntity.chatTurn), after what is pending.
   */
  private turn(event: Extract<SimEvent, { kind: 'turn' }>): void {
    const cacheRead = Math.min(event.cacheRead, event.prompt);
    const usage: TurnUsage = {
      prompt_tokens: event.prompt,
      completion_tokens: 20,
      total_tokens: event.prompt + 20,
      cache_read_tokens: cacheRead,
      cache_write_tokens: event.prompt - cacheRead,
      uncached_input_tokens: 0,
    };
    const user = this.append({
      kind: 'batch',
      message: event.asks,
      rows: 1,
      tokensPerRow: event.userTokens,
      prompt: null,
    });
    const quiet = this.foldIfQuiet(user, { turnFollows: true });
    const rules = this.rules;
    const unwaited =
      this.quietGateway &&
      !quiet &&
      rules !== null &&
      turnRunsWithoutWorkflow(rules, this.fold, user, this.standing(user));
    if (unwaited) {
      this.unwaitedTurns += 1;
      if (!this.standing(user).current) this.unwaitedStale += 1;
      // The gateway notifies this batch before the model call; a workflow that keeps up works it off before the
      // reply lands (this simulation's compactions settle at once, where real background ones take the summary's
      // time: a reply stored meanwhile is applied as a reading either way).
      this.notify({ ...user, turnFollows: true }, { unwaited: true });
    }
    if (quiet || unwaited) {
      this.direct += 1;
      const checkpoint = event.checkpoint ? { nativeCheckpoint: true } : {};
      const reply = { ...this.appendReply(event), turn: usage, readVersion: user.version, ...checkpoint };
      const foldBefore = this.fold;
      if (!this.foldIfQuiet(reply)) {
        this.notify(reply);
        return;
      }
      // The gateway writes a recovery this quiet reply completes (workers/gateway/chatTurns.ts).
      const recovery = recoveryCompletedBy(this.publishedCache, foldBefore, this.fold as QuietFold);
      if (recovery) this.gatewayRecoveries.push(recovery);
      return;
    }
    // The chat-turn update: the workflow gets to it after what is pending; the gateway's notification of its batch
    // opens an epoch it does not judge.
    this.deliver();
    const { state } = this;
    if (this.quietGateway) this.since = null;
    this.apply({ ...user, notification: this.notifyOpen() }, { turnFollows: true });
    state.turnSeq += 1;
    const reply = this.appendReply(event);
    absorbTotals(state, reply);
    markApplied(state.batches, reply.seq as number, reply.seq as number);
    state.processedBatches += 1;
    state.readingBaseTokens = reply.activeTokens - event.replyTokens;
    this.counted(accountCacheUsage(state.cache, usage));
    if (event.checkpoint) {
      recordNativeCheckpoint(state, this.engine, coveredBefore(reply, reply.tokens), `native-${reply.seq}`);
    } else {
      this.engine.updateFromResponse(usage);
      state.autoSinceModelCall = false;
      this.maybeCompact('post_response');
    }
    this.publish();
  }

  /** The model's reply to a turn, appended with its reading (none for a native checkpoint's reply). */
  private appendReply(event: Extract<SimEvent, { kind: 'turn' }>): StoredBatch {
    return this.append({
      kind: 'batch',
      message: 'assistant',
      rows: 1,
      tokensPerRow: event.replyTokens,
      prompt: event.checkpoint ? null : event.prompt,
    });
  }

  /**
   * Delivers what is pending, lets a running compaction finish, and applies what is still folded (as the next
   * notification would): final states compare.
   */
  flush(): void {
    this.deliver();
    if (this.running) {
      this.settleRunning(AFTER_STREAM);
      this.publish();
    }
    this.applyFold(this.notifyOpen());
  }

  private notifyOpen(): NotificationFold {
    this.notified += 1;
    this.log.epoch += 1;
    return { epoch: this.log.epoch, quiet: this.fold };
  }

  /** The quiet batches a notification carries, applied (ConversationEntity.applyNotification). */
  private applyFold(notification: NotificationFold | undefined): void {
    this.counted(applyNotificationFold(this.state, this.engine, notification));
  }

  private counted(recovery: CacheRecovery | null): void {
    if (recovery) this.recoveries.push({ ...recovery });
  }

  private publish(): void {
    this.publishedCache = structuredClone(this.state.cache);
    const compacting = this.running !== null;
    this.rules = quietRulesFor(this.state, this.engine, { compacting, foldsAtSettle: compacting });
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

  /** ConversationEntity.apply. */
  private apply(batch: StoredBatch, options: { turnFollows?: boolean } = {}): void {
    const { state } = this;
    this.applyFold(batch.notification);
    absorbTotals(state, batch);
    if (batch.freshAssistant) state.autoSinceModelCall = false;
    if (batch.users > 0) {
      state.userSinceCompaction = true;
      if (state.autoPaused === 'fixed_point') state.autoPaused = null;
    }
    const measured = (batch.readVersion ?? batch.version) > state.lastCommitVersion;
    if (batch.turn) {
      state.turnSeq += 1;
      this.counted(accountCacheUsage(state.cache, batch.turn, { watched: measured }));
    }
    let compacted = false;
    if (batch.nativeCheckpoint && measured)
      recordNativeCheckpoint(
        state,
        this.engine,
        batch.nativeCovered ?? coveredBefore(batch, batch.tokens),
        `native-${batch.seq}`,
      );
    if (batch.usage && measured) {
      state.readingBaseTokens = batch.activeTokens - (batch.usageTailTokens ?? 0);
      this.engine.updateFromResponse(batch.usage);
      state.autoSinceModelCall = false;
      compacted = this.maybeCompact('post_response');
    }
    if (!compacted && batch.incoming) compacted = this.hygiene(batch.incoming);
    if (!compacted && !batch.usage && (batch.incoming || options.turnFollows || batch.turnFollows === true)) {
      this.maybeCompact('preflight', contextTokens(state, this.engine));
    }
    if (batch.seq !== null) state.processedBatches += 1;
    markApplied(state.batches, batch.seq, batch.latestSeq);
  }

  /** ConversationEntity.maybeCompact: starts a background compaction, which decides nothing on this batch yet. */
  private maybeCompact(trigger: 'post_response' | 'preflight', tokens?: number): boolean {
    const { state, engine } = this;
    if (!state.config.enabled || state.autoSinceModelCall || this.running) return false;
    const wouldRun = (tokens ?? engine.exportState().lastPromptTokens) >= engine.thresholdTokens;
    if (!wouldRun || engine.blockingReason() !== null || this.inLoopPaused()) return false;
    if (!engine.shouldCompress(tokens)) return false;
    // BackgroundCompactions.start (childInputOf: beginCompaction) and SPEC §7.6's "next request goes out as is".
    const started = contextTokens(state, engine);
    engine.beginCompaction({ force: false });
    const script = this.nextScript();
    this.running = {
      trigger,
      event: this.event,
      tokens: started,
      script,
      settleAt: this.event + 1 + (script.events ?? 0),
      commitAt: this.event + 1 + (script.events ?? 0) - Math.min(script.commitLead ?? 0, script.events ?? 0),
      outcome: null,
    };
    this.backgroundStarted += 1;
    state.autoSinceModelCall = true;
    return false;
  }

  private nextScript(): SimOutcome {
    return this.outcomes[this.compactions++ % this.outcomes.length] as SimOutcome;
  }

  /**
   * BackgroundCompactions.settle with the workflow's foldBeforeSettle: the compaction's commit (if it commits), a
   * new notification epoch whose fold — the batches that stayed quiet while it ran — is applied first, then the
   * outcome, with SPEC §7.6's flag as it stood (settleCompaction `background`).
   */
  private settleRunning(settledAt: number): boolean {
    const running = this.running;
    if (!running) return false;
    const { state } = this;
    const outcome = running.outcome ?? this.commitOf(running.script, { background: true });
    this.since = null;
    this.applyFold(this.notifyOpen());
    this.running = null;
    const sinceModelCall = state.autoSinceModelCall;
    this.settle(running.trigger, { event: running.event, settledAt }, running.tokens, running.script, outcome);
    state.autoSinceModelCall = sinceModelCall;
    return true;
  }

  private inLoopPaused(): boolean {
    const { state } = this;
    if (state.autoPaused === 'fixed_point') return true;
    const breaker = conversationBreaker(state.host, pruneAutoTimes(state.autoTimes, this.clock.now));
    state.autoPaused = breaker ? breaker.pause : null;
    return breaker !== null;
  }

  /** ConversationEntity.hygiene: above the safety net a running background compaction is waited for first. */
  private hygiene(incoming: NonNullable<StoredBatch['incoming']>): boolean {
    const { state } = this;
    if (!state.config.enabled || (state.autoSinceModelCall && !this.running)) return false;
    if (state.hygieneCooldownUntil !== null && this.clock.now < state.hygieneCooldownUntil) return false;
    if (!this.hygieneDecision(incoming).run) return false;
    if (this.running) {
      this.settleRunning(this.event);
      if (!this.hygieneDecision(incoming).run || state.autoSinceModelCall) return true;
    }
    const status = this.compact('hygiene');
    if (status !== 'committed' && status !== 'fallback') {
      state.hygieneCooldownUntil = this.clock.now + HYGIENE_FAILURE_COOLDOWN_S * 1000;
    }
    return true;
  }

  private hygieneDecision(incoming: NonNullable<StoredBatch['incoming']>) {
    const { state, engine } = this;
    return gatewayHygieneDecision({
      ...hygieneHistory(state, engine, incoming),
      contextLength: state.contextLength,
      enabled: state.config.enabled,
      hardMessageLimit: state.config.hygieneHardMessageLimit,
    });
  }

  /**
   * A blocking compaction (manual, hygiene; ConversationEntity.compact): a running background one is settled first,
   * then this one runs with the next scripted outcome and is settled at once.
   */
  private compact(trigger: 'manual' | 'hygiene'): CompactionStatus {
    const { state, engine } = this;
    this.settleRunning(this.event);
    const tokens = contextTokens(state, engine);
    engine.beginCompaction({ force: trigger === 'manual' });
    const script = this.nextScript();
    this.settle(trigger, { event: this.event, settledAt: this.event }, tokens, script, this.commitOf(script));
    return script.status;
  }

  /**
   * The child's outcome; a committed one has swapped the transcript in the log, bumping its version and — unless it
   * is the background compaction whose rules are current, published to fold until its settlement — the
   * notification epoch (infra/db/conversationHead.ts setTotals).
   */
  private commitOf(script: SimOutcome, options: { background?: boolean } = {}): CompactionOutcome {
    const { log } = this;
    const committed = script.status === 'committed' || script.status === 'fallback';
    if (committed) {
      log.activeTokens = Math.floor(log.activeTokens * script.keep);
      log.activeMessages = Math.max(5, Math.floor(log.activeMessages * script.keep));
      log.version += 1;
      const folding = options.background === true && this.rules?.foldsAtSettle === true;
      if (!folding || this.rules?.epoch !== log.epoch) {
        log.epoch += 1;
        this.since = null;
      }
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
    return outcome;
  }

  /** settleCompaction (workflows/conversation/compact.ts): the outcome applied, the decision recorded. */
  private settle(
    trigger: CompactionTrigger,
    at: { event: number; settledAt: number },
    tokens: number,
    script: SimOutcome,
    outcome: CompactionOutcome,
  ): void {
    const { state, engine } = this;
    const committed = script.status === 'committed' || script.status === 'fallback';
    const automatic = trigger !== 'manual';
    if (committed && automatic && reachedFixedPoint(state.host, outcome.similarity, state.userSinceCompaction)) {
      state.autoPaused = 'fixed_point';
    }
    applyOutcome(state, engine, outcome, { automatic, now: this.clock.now });
    const s = engine.exportState();
    this.decisions.push({
      ...at,
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
  }
}
