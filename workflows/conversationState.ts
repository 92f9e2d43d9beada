// State of the conversation workflow: its input, the compact state carried through continue-as-new (DESIGN.md §3),
// and the status view built from it. Pure and deterministic.
import {
  type CacheTtl,
  type CompressionConfig,
  type CompressorState,
  type ContextCompressor,
  promptCachingState,
} from '../engine/index.js';
import type { CompactionTimeouts } from './compaction.js';
import type { CacheTelemetry, CompactionResult, ConversationStatus } from './definitions.js';

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

/** The compact state carried through continue-as-new: ids, counters, engine state, last usage; no transcript. */
export interface CarriedState {
  sessionId: string;
  config: CompressionConfig;
  policyVersion: number;
  cacheTtl: CacheTtl | null;
  compressor: CompressorState;
  seenKeys: string[];
  compactionSeq: number;
  turnSeq: number;
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
  cache: CacheTelemetry;
  runs: number;
}

export const EMPTY_CACHE_TELEMETRY: CacheTelemetry = {
  turns: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  uncachedInputTokens: 0,
  lastTurn: null,
  watching: null,
  lastRecovery: null,
};

/** Tokens the next request is estimated to carry: last real reading + estimate of what came after it (§3.4). */
export function contextTokens(state: CarriedState, engine: ContextCompressor): number {
  const last = engine.exportState().lastPromptTokens;
  return last > 0 ? last + state.tokensSinceReading : state.activeTokens;
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
  pendingItems: number,
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
    trippedUntil: iso(s.trippedUntil),
    summaryCooldownUntil: iso(s.summaryCooldownUntil),
    structuralBackoffUntil: iso(s.structuralBackoffUntil),
    hygieneCooldownUntil: iso(state.hygieneCooldownUntil),
    policyVersion: state.policyVersion,
    pendingItems,
    processedBatches: state.processedBatches,
    lastCompaction: state.lastCompaction,
    promptCaching: cachingOf(state.model, state.provider, state.cacheTtl),
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
    trippedUntil: null,
    summaryCooldownUntil: null,
    structuralBackoffUntil: null,
    hygieneCooldownUntil: null,
    policyVersion: 0,
    pendingItems,
    processedBatches: 0,
    lastCompaction: null,
    promptCaching: cachingOf(input.model, input.provider ?? null, null),
    cache: EMPTY_CACHE_TELEMETRY,
    notices: notices.slice(),
  };
}

/** Current details for the Temporal UI (DESIGN.md §3): tokens / threshold / compactions at a glance. */
export function detailsText(ids: { tenantId: string; conversationId: string }, status: ConversationStatus): string {
  const last = status.lastCompaction;
  return [
    `**${ids.tenantId} / ${ids.conversationId}** — session \`${status.sessionId}\`, model \`${status.model}\``,
    `Context: ${status.contextTokens} / ${status.contextLength} tokens (${status.usagePercent.toFixed(1)} %), ` +
      `threshold ${status.thresholdTokens}`,
    `Messages: ${status.activeMessages} active; compactions: ${status.compressionCount}` +
      (status.blockedBy ? `; automatic compaction blocked: ${status.blockedBy}` : ''),
    last ? `Last compaction: ${last.trigger} → ${last.status}` : 'No compaction yet',
    status.promptCaching.line,
  ].join('\n');
}
