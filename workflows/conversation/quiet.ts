// Quiet batches on the workflow's side (engine/quietBatches.ts, issue #11 §2): the rules it publishes for its
// current state, and how the fold of the quiet batches a notification carries changes that state. Pure and
// deterministic (no Temporal API), so the property test runs the same code as the workflow.
import type { CacheRecovery } from '../../contracts/conversation.js';
import type { NotificationFold, QuietRules } from '../../contracts/conversationLog.js';
import {
  type CompressionConfig,
  ContextCompressor,
  normalizeCompressorState,
  quietRulesOf,
} from '../../engine/index.js';
import { nativeCompactThreshold } from '../../engine/nativeCompaction.js';
import { accountFoldedTurns } from './cacheTelemetry.js';
import { absorbTotals, type CarriedState, markRangeApplied, nativeThresholdOf, ownedByAppServer } from './state.js';

/**
 * The rules the gateway judges the next batches by. `compacting`: a background compaction runs; `foldsAtSettle`:
 * the workflow applies the fold before its outcome (then batches may stay quiet meanwhile; else none is).
 */
export function quietRulesFor(
  state: CarriedState,
  engine: ContextCompressor,
  compacting: { compacting: boolean; foldsAtSettle: boolean },
): QuietRules {
  return quietRulesOf({
    epoch: state.notifyEpoch ?? 0,
    enabled: state.config.enabled,
    contextLength: state.contextLength,
    thresholdTokens: engine.thresholdTokens,
    hardMessageLimit: state.config.hygieneHardMessageLimit,
    compressor: engine.exportState(),
    readingBaseTokens: state.readingBaseTokens,
    compacting: compacting.compacting,
    foldsAtSettle: compacting.foldsAtSettle,
    pausedAtFixedPoint: state.autoPaused === 'fixed_point',
    // SPEC §15.2: an app-server turn runs in the worker that holds the app-server (never in the gateway).
    turnsQuiet: state.host.background && !ownedByAppServer(state),
    gatewayTurns: state.host.background && !ownedByAppServer(state),
    nativeBase: state.nativeBase ?? null,
    nativeCompactThreshold: nativeThresholdOf(state, engine),
  });
}

/**
 * The rules of a conversation that has decided nothing yet (epoch 0): written with the conversation's row, so that
 * its first batches need not wait for the workflow's first publication (which replaces them).
 */
export function startingQuietRules(
  config: CompressionConfig,
  window: { model: string; provider: string | null; contextLength: number },
): QuietRules | null {
  const engine = new ContextCompressor({
    model: window.model,
    contextLength: window.contextLength,
    ...(window.provider ? { provider: window.provider } : {}),
    config,
    summarize: async () => {
      throw new Error('the starting rules never summarise');
    },
  });
  return quietRulesOf({
    epoch: 0,
    enabled: config.enabled,
    contextLength: window.contextLength,
    thresholdTokens: engine.thresholdTokens,
    hardMessageLimit: config.hygieneHardMessageLimit,
    compressor: normalizeCompressorState({}),
    readingBaseTokens: 0,
    compacting: false,
    foldsAtSettle: false,
    pausedAtFixedPoint: false,
    // The tenant's host policy (`background`) is unknown here: turns wait for the workflow's first publication.
    turnsQuiet: false,
    gatewayTurns: false,
    nativeCompactThreshold: config.codexResponsesNative ? nativeCompactThreshold(config, engine.thresholdTokens) : null,
  });
}

/**
 * The quiet batches committed since the previous notification, applied before what the notification brings: their
 * totals, flags and merged usage reading, as each batch would have been applied (none of them could decide).
 * Returns the cache recovery their turns completed, for the caller to record on its compaction.
 */
export function applyNotificationFold(
  state: CarriedState,
  engine: ContextCompressor,
  notification: NotificationFold | undefined,
): CacheRecovery | null {
  if (!notification) return null;
  state.notifyEpoch = Math.max(state.notifyEpoch ?? 0, notification.epoch);
  const quiet = notification.quiet;
  // A fold is carried again by every notification until a publication covers it: applied once.
  if (!quiet || quiet.toSeq <= state.batches.appliedSeq) return null;
  absorbTotals(state, quiet);
  if (quiet.freshAssistant) state.autoSinceModelCall = false;
  if (quiet.users > 0) {
    state.userSinceCompaction = true;
    if (state.autoPaused === 'fixed_point') state.autoPaused = null;
  }
  if (quiet.usage && quiet.usageVersion > state.lastCommitVersion) {
    state.readingBaseTokens = quiet.readingBaseTokens;
    engine.updateFromResponse(quiet.usage);
    state.autoSinceModelCall = false;
  }
  let recovery: CacheRecovery | null = null;
  if (quiet.turns) {
    // Chat turns the gateway ran (their replies were quiet): the counts the status shows, and the cache recovery
    // being measured, as each turn would have been counted in order (cacheTelemetry.ts).
    state.turnSeq += quiet.turns.turns;
    recovery = accountFoldedTurns(state.cache, quiet.turns);
  }
  state.processedBatches += quiet.batches;
  markRangeApplied(state.batches, quiet.fromSeq, quiet.toSeq);
  return recovery;
}
