// State of the conversation workflow (its input and carried state are contracts/conversation.ts) and the status view
// built from it. Pure and deterministic.

import type {
  AppliedBatches,
  CacheTelemetry,
  CarriedState,
  ConversationInput,
  ConversationStatus,
} from '../../contracts/conversation.js';

export type { AppliedBatches, CarriedState, ConversationInput };

import {
  type CacheTtl,
  type ContextCompressor,
  normalizeCompressorState,
  promptCachingState,
} from '../../engine/index.js';
import { type NativeCovered, nativeCompactThreshold } from '../../engine/nativeCompaction.js';

export const EMPTY_CACHE_TELEMETRY: CacheTelemetry = {
  turns: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  uncachedInputTokens: 0,
  lastTurn: null,
  watching: null,
  lastRecovery: null,
};

/** What a conversation opens with: the fields it is opened with, everything else as it is before any decision. */
export type OpeningFields = Pick<
  CarriedState,
  | 'sessionId'
  | 'config'
  | 'host'
  | 'policyVersion'
  | 'cacheTtl'
  | 'compactionSeq'
  | 'version'
  | 'activeMessages'
  | 'activeTokens'
  | 'batches'
  | 'contextLength'
  | 'model'
  | 'provider'
  | 'notifyEpoch'
>;

export function openingState(fields: OpeningFields): CarriedState {
  return {
    ...fields,
    compressor: normalizeCompressorState({}),
    turnSeq: 0,
    readingBaseTokens: fields.activeTokens,
    lastCommitVersion: 0,
    autoSinceModelCall: false,
    autoTimes: [],
    autoPaused: null,
    userSinceCompaction: false,
    hygieneCooldownUntil: null,
    processedBatches: 0,
    lastCompaction: null,
    notices: [],
    lastCommittedCompactionId: null,
    cache: { ...EMPTY_CACHE_TELEMETRY },
    runs: 0,
  };
}

/** SPEC §15.2: a Codex app-server owns the conversation's context (the local compressor keeps out). */
export function ownedByAppServer(state: CarriedState): boolean {
  return state.runtime === 'codex_app_server';
}

/** SPEC §15.1: the `compact_threshold` of this conversation's Responses requests, or null when not opted in. */
export function nativeThresholdOf(state: CarriedState, engine: ContextCompressor): number | null {
  return state.config.codexResponsesNative ? nativeCompactThreshold(state.config, engine.thresholdTokens) : null;
}

/** Tokens the next request is estimated to carry: last real reading + estimate of what came after it (§3.4). */
export function contextTokens(state: CarriedState, engine: ContextCompressor): number {
  const last = engine.exportState().lastPromptTokens;
  if (last > 0) return last + Math.max(0, state.activeTokens - state.readingBaseTokens);
  // After a native checkpoint and before the next reading: what is sent besides its opaque items (SPEC §15.1).
  return state.activeTokens - (state.nativeBase?.tokens ?? 0);
}

/**
 * A reply that came with a native checkpoint (SPEC §15.1): the server compacted what came before it. Its reading
 * measured the input before that, so it is neither a verdict nor a trigger: the reading is cleared, and until the
 * next real one the estimate counts what is sent besides the checkpoint's opaque items — everything but what it
 * stands in for (`covered`: the non-system rows its request carried). Its record (`compactionId`, written by the
 * caller) gets the cache economics after it.
 */

/** What a checkpoint stands in for when its turn did not say: all of the live transcript before its reply. */
export function coveredBefore(totals: { activeTokens: number; activeMessages: number }, replyTokens: number) {
  return { tokens: totals.activeTokens - replyTokens, messages: totals.activeMessages - 1 };
}
export function recordNativeCheckpoint(
  state: CarriedState,
  engine: ContextCompressor,
  covered: NativeCovered,
  compactionId: string | null,
): void {
  state.nativeBase = { tokens: Math.max(0, covered.tokens), messages: Math.max(0, covered.messages) };
  // As after any reply: what follows it is counted on top of the next reading (SPEC §7.6).
  state.readingBaseTokens = state.nativeBase.tokens;
  engine.restoreState({ ...engine.exportState(), lastPromptTokens: 0 });
  state.autoSinceModelCall = false;
  // The cached prefix after it is new (SPEC §12.3): measured on its record as after a local compaction.
  // A local compaction still being measured keeps its measurement.
  if (compactionId !== null && state.cache.watching === null) {
    state.cache.watching = { compactionId, turnsSince: 0, rewriteTokens: null };
  }
}

/** The id of the record of a native checkpoint: its reply's batch in the conversation (or, else, its row). */
export function nativeCompactionId(conversationId: string, reply: { seq?: number | null; messageId?: number }): string {
  return typeof reply.seq === 'number'
    ? `native:${conversationId}:${reply.seq}`
    : `native:${conversationId}:m${reply.messageId}`;
}

/**
 * The history gateway hygiene judges (SPEC §11.2) before an incoming batch: the live transcript without the batch
 * and without what a native checkpoint stands in for (SPEC §15.1; its tokens only until the next real reading).
 */
export function hygieneHistory(
  state: CarriedState,
  engine: ContextCompressor,
  incoming: { rows: number; tokens: number },
): { historyLength: number; historyTokens: number; lastPromptTokens: number } {
  const lastPromptTokens = engine.exportState().lastPromptTokens;
  const base = state.nativeBase ?? { tokens: 0, messages: 0 };
  return {
    historyLength: Math.max(0, state.activeMessages - incoming.rows - base.messages),
    historyTokens: Math.max(0, state.activeTokens - incoming.tokens - (lastPromptTokens > 0 ? 0 : base.tokens)),
    lastPromptTokens,
  };
}

/** Takes totals that are newer than the ones the state holds (notifications and commits may arrive out of order). */
export function absorbTotals(
  state: CarriedState,
  totals: { version: number; activeMessages: number; activeTokens: number },
): void {
  if (totals.version < state.version) return;
  state.version = totals.version;
  state.activeMessages = totals.activeMessages;
  state.activeTokens = totals.activeTokens;
}

/** Marks batch `seq` applied (and, with `latestSeq`, which batches exist); advances the contiguous prefix. */
export function markApplied(batches: AppliedBatches, seq: number | null, latestSeq: number): void {
  batches.latestSeq = Math.max(batches.latestSeq, latestSeq, seq ?? 0);
  if (seq !== null && seq > batches.appliedSeq && !batches.ahead.includes(seq)) batches.ahead.push(seq);
  batches.ahead.sort((a, b) => a - b);
  while (batches.ahead[0] !== undefined && batches.ahead[0] <= batches.appliedSeq + 1) {
    batches.appliedSeq = Math.max(batches.appliedSeq, batches.ahead.shift() as number);
  }
}

/** Marks batches `from`…`to` applied (the quiet batches a notification folded). */
export function markRangeApplied(batches: AppliedBatches, from: number, to: number): void {
  if (from > batches.appliedSeq + 1) {
    for (let seq = from; seq <= to; seq += 1) markApplied(batches, seq, to);
    return;
  }
  batches.appliedSeq = Math.max(batches.appliedSeq, to);
  markApplied(batches, null, to);
}

/** A missing notification was waited for long enough: every batch the workflow knows of counts as applied. */
export function skipGaps(batches: AppliedBatches): void {
  batches.appliedSeq = Math.max(batches.appliedSeq, batches.latestSeq, ...batches.ahead);
  batches.ahead = [];
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function cachingOf(model: string, provider: string | null, cacheTtl: CacheTtl | null) {
  const c = promptCachingState({ model, provider: provider ?? '', cacheTtl });
  return { enabled: c.enabled, reason: c.reason, line: c.line };
}

export function buildStatus(
  ids: { tenantId: string; conversationId: string },
  state: CarriedState,
  engine: ContextCompressor,
  live: { pendingItems: number; recentAuto: number; compacting: ConversationStatus['compacting'] },
): ConversationStatus {
  const s = engine.exportState();
  const tokens = contextTokens(state, engine);
  return {
    ...ids,
    sessionId: state.sessionId,
    model: state.model,
    provider: state.provider,
    contextLength: state.contextLength,
    thresholdPercent: engine.thresholdPercent,
    thresholdTokens: engine.thresholdTokens,
    lastPromptTokens: engine.getStatus().last_prompt_tokens,
    contextTokens: tokens,
    usagePercent: state.contextLength ? Math.min(100, (tokens / state.contextLength) * 100) : 0,
    compressionCount: s.compressionCount,
    activeMessages: state.activeMessages,
    ineffectiveStrikes: s.ineffectiveStrikes,
    fallbackStreak: s.fallbackStreak,
    blockedBy: engine.blockingReason(),
    autoPaused: state.autoPaused,
    autoCompactionsLastHour: live.recentAuto,
    trippedUntil: iso(s.trippedUntil),
    summaryCooldownUntil: iso(s.summaryCooldownUntil),
    structuralBackoffUntil: iso(s.structuralBackoffUntil),
    hygieneCooldownUntil: iso(state.hygieneCooldownUntil),
    policyVersion: state.policyVersion,
    pendingItems: live.pendingItems,
    processedBatches: state.processedBatches,
    appliedSeq: state.batches.appliedSeq,
    lastCompaction: state.lastCompaction,
    compacting: live.compacting,
    promptCaching: cachingOf(state.model, state.provider, state.cacheTtl),
    nativeCompactThreshold: nativeThresholdOf(state, engine),
    cache: state.cache,
    notices: state.notices.slice(),
  };
}

/** The status before the conversation's session is open (queries may arrive in the first activation). */
export function startingStatus(input: ConversationInput, pendingItems: number, notices: string[]): ConversationStatus {
  return {
    tenantId: input.tenantId,
    conversationId: input.conversationId,
    sessionId: '',
    model: input.model,
    provider: input.provider ?? null,
    contextLength: input.contextLength ?? 0,
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
    autoPaused: null,
    autoCompactionsLastHour: 0,
    trippedUntil: null,
    summaryCooldownUntil: null,
    structuralBackoffUntil: null,
    hygieneCooldownUntil: null,
    policyVersion: 0,
    pendingItems,
    processedBatches: 0,
    appliedSeq: 0,
    lastCompaction: null,
    compacting: null,
    promptCaching: cachingOf(input.model, input.provider ?? null, null),
    nativeCompactThreshold: null,
    cache: EMPTY_CACHE_TELEMETRY,
    notices: notices.slice(),
  };
}
