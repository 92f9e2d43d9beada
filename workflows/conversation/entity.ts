// The operations of one conversation (DESIGN.md §3), run one at a time by the workflow's main loop. Messages are
// already committed to PostgreSQL when the workflow hears of them (a content-free StoredBatch); the workflow takes
// the decisions: the post-response check (SPEC §7.6), gateway hygiene (SPEC §11), the preflight check, compactions
// as child workflows, model switches (SPEC §4.6); the agent turn of chat backend mode is chatTurn.ts.
import { patched, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { ConversationActivities } from '../../activities/conversation.js';
import type { RespondActivities } from '../../activities/respond.js';
import type { CompactionTimeouts, CompactionTrigger } from '../../contracts/compaction.js';
import type { CacheRecovery, CompactionResult, ConversationStatus, TurnResult } from '../../contracts/conversation.js';
import type { NotificationFold, StoredBatch } from '../../contracts/conversationLog.js';
import {
  ContextCompressor,
  gatewayHygieneDecision,
  HYGIENE_FAILURE_COOLDOWN_S,
  hygieneWarningThreshold,
  NOTICE_HYGIENE_FAILED,
  NOTICE_HYGIENE_WARNING,
  type Usage,
} from '../../engine/index.js';
import { localStoreActivityOptions, modelActivityOptions, storeActivityOptions } from '../activityOptions.js';
import { compactOnAppServer } from './appServer.js';
import { BackgroundCompactions } from './background.js';
import { conversationBreaker, HOUR_MS, pruneAutoTimes, tenantBreaker } from './brakes.js';
import { accountCacheUsage } from './cacheTelemetry.js';
import { takeNativeCheckpoint } from './chatTurn.js';
import { type CompactionOptions, runCompaction } from './compact.js';
import { applyNotificationFold, quietRulesFor } from './quiet.js';
import {
  absorbTotals,
  buildStatus,
  type CarriedState,
  contextTokens,
  coveredBefore,
  hygieneHistory,
  markApplied,
  nativeCompactionId,
  ownedByAppServer,
} from './state.js';
import { showInTemporalUi } from './visibility.js';

const store = proxyActivities<ConversationActivities>(storeActivityOptions);
/** The publication runs in the worker's own workflow task: no server round trip (DESIGN.md §3). */
const localStore = proxyLocalActivities<ConversationActivities>(localStoreActivityOptions);

/** Patch id of local publications: histories recorded before it scheduled `recordState` as an activity task. */
const LOCAL_PUBLISH_PATCH = 'local-publish';
const model = proxyActivities<RespondActivities>(modelActivityOptions);

const MAX_NOTICES = 20;
/** Patch id of background compaction (issue #11 §4): workflows that started before it keep blocking. */
const BACKGROUND_COMPACTION_PATCH = 'background-compaction';
/** Patch id: batches may stay quiet while a background compaction runs; their fold is applied before its outcome. */
const FOLD_AT_SETTLE_PATCH = 'fold-at-settle';

const neverSummarize = async (): Promise<string> => {
  throw new Error('the summarizer runs in the summarize activity, never in workflow code');
};

type AutoTrigger = Extract<CompactionTrigger, 'preflight' | 'post_response' | 'hygiene'>;

export class ConversationEntity {
  engine: ContextCompressor;
  /** The automatic compaction running in the background (SPEC §19 `background`). */
  readonly background = new BackgroundCompactions(this, () => this.foldBeforeSettle());

  constructor(
    readonly ids: { tenantId: string; conversationId: string; source: string },
    readonly state: CarriedState,
    private readonly options: { timeouts: CompactionTimeouts; pendingItems: () => number },
  ) {
    this.engine = this.buildEngine();
  }

  get timeouts(): CompactionTimeouts {
    return this.options.timeouts;
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
    // Also an event of the tenant's feed (issue #14 §2), stored with the next publication, once: keyed by this run
    // and the notice's number in it (a retried publication writes nothing twice).
    this.unpublishedNotices.push({ key: `notice:${workflowInfo().runId}:${++this.noticesThisRun}`, text });
    // Publications that keep failing must not grow it (nor every later activity input): the newest are kept.
    if (this.unpublishedNotices.length > MAX_NOTICES) {
      this.unpublishedNotices.splice(0, this.unpublishedNotices.length - MAX_NOTICES);
    }
  }

  /** Notices not yet stored as events, and how many this run has emitted. */
  private unpublishedNotices: Array<{ key: string; text: string }> = [];
  private noticesThisRun = 0;

  /** Read-only (query handlers call it too). */
  status(): ConversationStatus {
    const recentAuto = this.state.autoTimes.filter((t) => Date.now() - t < HOUR_MS).length;
    return buildStatus(this.ids, this.state, this.engine, {
      pendingItems: this.options.pendingItems(),
      recentAuto,
      compacting: this.background.info,
    });
  }

  /**
   * Publishes the state: search attributes and details for the Temporal UI (DESIGN.md §3), and the status snapshot
   * and applied batches in PostgreSQL, where the gateway reads them (issue #9 §6). A policy change seen there is
   * taken over, then published again.
   */
  async publish(): Promise<void> {
    showInTemporalUi(this.ids, this.status());
    const ids = { tenantId: this.ids.tenantId, conversationId: this.ids.conversationId };
    const publisher = patched(LOCAL_PUBLISH_PATCH) ? localStore : store;
    const notices = this.unpublishedNotices.slice();
    const record = (policyVersion: number | null) =>
      publisher.recordState({
        ...ids,
        appliedSeq: this.state.batches.appliedSeq,
        policyVersion,
        status: this.status(),
        quietRules: quietRulesFor(this.state, this.engine, this.compactingRules()),
        ...(notices.length > 0 ? { notices } : {}),
      });
    await this.safely('publishing the status', async () => {
      const published = () => this.unpublishedNotices.splice(0, notices.length);
      if ((await record(this.state.policyVersion)).recorded) return void published();
      const fresh = await store.loadTenantConfig({ tenantId: this.ids.tenantId });
      this.state.compressor = this.engine.exportState();
      Object.assign(this.state, { config: fresh.config, host: fresh.host, policyVersion: fresh.policyVersion });
      this.engine = this.buildEngine();
      // Published with the new policy; a policy changed again meanwhile is taken over at the next publication.
      await record(null);
      published();
    });
  }

  /** How the rules treat a running background compaction (engine/quietBatches.ts `foldsAtSettle`). */
  private compactingRules(): { compacting: boolean; foldsAtSettle: boolean } {
    const compacting = this.background.active;
    return { compacting, foldsAtSettle: compacting && patched(FOLD_AT_SETTLE_PATCH) };
  }

  /**
   * Before a background compaction's outcome: a new notification epoch (activities/conversation.ts openNotification)
   * and the quiet batches committed meanwhile, applied first, as each would have been had it been notified.
   */
  private async foldBeforeSettle(): Promise<void> {
    if (!patched(FOLD_AT_SETTLE_PATCH)) return;
    const ids = { tenantId: this.ids.tenantId, conversationId: this.ids.conversationId };
    const notification = await this.safely('reading the quiet batches', () => localStore.openNotification(ids));
    if (notification) await this.applyNotification(notification);
  }

  /**
   * Runs a step whose failure must not stop the conversation: store activities retry until PostgreSQL answers, so
   * what reaches here is non-retryable (activities/guard.ts); it is noted and the conversation goes on.
   */
  async safely<T>(what: string, step: () => Promise<T>): Promise<T | null> {
    try {
      return await step();
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
      this.notice(`A step failed and was skipped (${what}): ${cause instanceof Error ? cause.message : String(cause)}`);
      return null;
    }
  }

  /**
   * Runs one blocking compaction (a child workflow) and applies its outcome (compact.ts). A background compaction
   * still running is settled first: one compaction at a time, and the blocking one works on its result.
   */
  async compact(trigger: CompactionTrigger, options: CompactionOptions = {}): Promise<CompactionResult> {
    // SPEC §15.2: the app-server owns the context; `/compress` asks it (appServer.ts).
    if (ownedByAppServer(this.state)) return compactOnAppServer(this, trigger);
    await this.background.wait();
    return runCompaction(this, trigger, options);
  }

  /** The brakes of SPEC §7.6 and §19 on an in-loop compaction; sets (and announces once) the pause. */
  private async inLoopPaused(): Promise<boolean> {
    const { state } = this;
    if (state.autoPaused === 'fixed_point' || state.autoPaused === 'client') return true;
    const recent = pruneAutoTimes(state.autoTimes, Date.now());
    let breaker = conversationBreaker(state.host, recent);
    if (!breaker && state.host.tenantMaxAutoPerHour !== null) {
      const count = await this.safely('counting the tenant’s compactions', () =>
        store.countTenantAutoCompactions({ tenantId: this.ids.tenantId, sinceMs: HOUR_MS }),
      );
      breaker = count === null ? null : tenantBreaker(state.host, count);
    }
    if (!breaker) {
      state.autoPaused = null;
      return false;
    }
    if (state.autoPaused !== breaker.pause) this.notice(breaker.notice);
    state.autoPaused = breaker.pause;
    return true;
  }

  /** An automatic in-loop compaction (SPEC §7.6), unless a brake holds: at most one between two model calls. */
  private async maybeCompact(trigger: Exclude<AutoTrigger, 'hygiene'>, tokens?: number) {
    const { state, engine } = this;
    if (ownedByAppServer(state)) return null; // SPEC §15.2: never the local compressor (`hermes`: appServer.ts)
    if (!state.config.enabled || state.autoSinceModelCall || this.background.active) return null;
    const wouldRun = (tokens ?? engine.exportState().lastPromptTokens) >= engine.thresholdTokens;
    if (!wouldRun || engine.blockingReason() !== null || (await this.inLoopPaused())) return null;
    if (!engine.shouldCompress(tokens)) return null;
    // Histories recorded before background compaction existed replay the blocking path (the patch marker is absent).
    if (!state.host.background || !patched(BACKGROUND_COMPACTION_PATCH)) return this.compact(trigger);
    await this.background.start(trigger);
    return null;
  }

  /** SPEC §11: the safety net before the turn of an incoming user message (frequency breakers do not stop it). */
  private async hygiene(incoming: NonNullable<StoredBatch['incoming']>): Promise<CompactionResult | null> {
    const { state } = this;
    if (ownedByAppServer(state)) return null; // SPEC §15.2: the app-server's context is not this host's to shrink
    // A background compaction counts as the automatic attempt since the last model call, but while it runs the
    // safety net still looks: above 85 % the turn waits for it (issue #11 §4).
    if (!state.config.enabled || (state.autoSinceModelCall && !this.background.active)) return null;
    if (state.hygieneCooldownUntil !== null && Date.now() < state.hygieneCooldownUntil) return null;
    let decision = this.hygieneDecision(incoming);
    if (!decision.run) return null;
    if (this.background.active) {
      const settled = await this.background.wait();
      decision = this.hygieneDecision(incoming);
      if (!decision.run || state.autoSinceModelCall) return settled;
    }
    const result = await this.compact('hygiene', { beforeRowId: incoming.rowId });
    const adopted = result.status === 'committed' || result.status === 'fallback';
    if (!adopted) {
      state.hygieneCooldownUntil = Date.now() + HYGIENE_FAILURE_COOLDOWN_S * 1000;
      if (result.status !== 'noop') this.notice(NOTICE_HYGIENE_FAILED);
    }
    const after = adopted ? state.activeTokens : decision.tokens;
    if (after >= hygieneWarningThreshold(state.contextLength)) this.notice(NOTICE_HYGIENE_WARNING);
    return result;
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
   * A committed batch. With a usage reading: the post-response check of the response that produced its assistant
   * message, then hygiene for a user message in it. Without: hygiene for a user message, then the preflight check
   * before the model call that answers it. At most one automatic compaction runs between two model calls, and a
   * reading taken before the latest compaction (its batch was accepted before that commit) is neither a verdict nor
   * a trigger (issue #9 §4).
   */
  async apply(batch: StoredBatch, options: { turnFollows?: boolean } = {}): Promise<CompactionResult | null> {
    const { state } = this;
    await this.applyNotification(batch.notification);
    absorbTotals(state, batch);
    if (batch.freshAssistant) state.autoSinceModelCall = false;
    if (batch.users > 0) {
      state.userSinceCompaction = true;
      if (state.autoPaused === 'fixed_point') state.autoPaused = null;
    }
    // The reply of a turn the gateway ran (chatTurns.ts): its reading counts unless a commit came after its read.
    const measured = (batch.readVersion ?? batch.version) > state.lastCommitVersion;
    if (batch.turn) await this.countTurn(batch.turn, measured);
    let compaction: CompactionResult | null = null;
    if (batch.nativeCheckpoint && measured) {
      // The batch's own totals: a later batch applied first must not count as covered (out-of-order notifications).
      const covered = batch.nativeCovered ?? coveredBefore(batch, batch.tokens);
      await takeNativeCheckpoint(this, covered, nativeCompactionId(this.ids.conversationId, { seq: batch.seq }));
    }
    if (batch.usage && measured) {
      state.readingBaseTokens = batch.activeTokens - (batch.usageTailTokens ?? 0);
      compaction = await this.afterResponse(batch.usage);
    }
    if (!compaction && batch.incoming) compaction = await this.hygiene(batch.incoming);
    if (!compaction && !batch.usage && (batch.incoming || options.turnFollows || batch.turnFollows === true)) {
      compaction = await this.maybeCompact('preflight', contextTokens(state, this.engine));
    }
    if (batch.seq !== null) state.processedBatches += 1;
    markApplied(state.batches, batch.seq, batch.latestSeq);
    return compaction;
  }

  /** The quiet batches a notification carries (quiet.ts), applied before what it brings. */
  async applyNotification(notification: NotificationFold | undefined): Promise<void> {
    const recovery = applyNotificationFold(this.state, this.engine, notification);
    if (recovery) await this.recordRecovery(recovery);
  }

  /** Post-response (§7.6): record the reading; at most one automatic compaction before the next call. */
  async afterResponse(usage: Usage): Promise<CompactionResult | null> {
    this.engine.updateFromResponse(usage);
    this.state.autoSinceModelCall = false;
    return this.maybeCompact('post_response');
  }

  /** One more turn, its cache economics (per turn; per compaction: rewrite after it, turns till reads recover). */
  async countTurn(usage: TurnResult['usage'], afterCompaction = true): Promise<void> {
    this.state.turnSeq += 1;
    const recovery = accountCacheUsage(this.state.cache, usage, { watched: afterCompaction });
    if (recovery) await this.recordRecovery(recovery);
  }

  /** A finished cache-recovery measurement, on its compaction's record. */
  private async recordRecovery(recovery: CacheRecovery): Promise<void> {
    await this.safely('recording cache recovery', () =>
      model.recordCacheRecovery({ tenantId: this.ids.tenantId, ...recovery }),
    );
  }
}
