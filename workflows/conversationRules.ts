// Pure rules of the conversation workflow: model window resolution, the user notice of a compaction outcome, and the
// cache accounting of chat turns. Deterministic; unit-tested without a server.
import { ApplicationFailure } from '@temporalio/workflow';
import {
  NOTICE_ABORT,
  NOTICE_FALLBACK,
  NOTICE_NOOP_NO_WINDOW,
  NOTICE_NOOP_SHORT,
  resolveUsableContextLength,
} from '../engine/index.js';
import type { CompactionOutcome } from './compaction.js';
import type { CacheTelemetry, TurnUsage } from './definitions.js';

/** A turn whose cache reads cover at least this share of its prompt counts as "cache recovered" after a compaction. */
export const CACHE_RECOVERED_SHARE = 0.5;

/** SPEC §4.1 / §4.4 in workflow code: an unknown -900k id or a window below 64,000 is refused. */
export function resolveWindow(modelName: string, provider: string | null, explicit: number | null): number {
  try {
    return resolveUsableContextLength(modelName, provider, explicit);
  } catch (err) {
    throw ApplicationFailure.nonRetryable((err as Error).message, 'InvalidModel');
  }
}

/** SPEC §16.5: what the user is told about a compaction (no-op texts, abort, fallback), or null. */
export function noticeFor(outcome: Pick<CompactionOutcome, 'status' | 'noopReason'>): string | null {
  if (outcome.status === 'noop') {
    return outcome.noopReason === 'insufficient_messages' ? NOTICE_NOOP_SHORT : NOTICE_NOOP_NO_WINDOW;
  }
  if (outcome.status === 'aborted') return NOTICE_ABORT;
  if (outcome.status === 'fallback') return NOTICE_FALLBACK;
  return null;
}

/** The outcome of a compaction child that failed as a whole: the transcript is untouched (SPEC §7.6). */
export function failedOutcome(compactionId: string, sessionId: string, err: unknown): CompactionOutcome {
  const error = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
  return {
    compactionId,
    status: 'failed',
    noopReason: null,
    sessionId,
    summaryBody: null,
    fallbackUsed: false,
    summarizerCalled: false,
    failureClass: null,
    stats: null,
    activeMessages: null,
    activeTokens: null,
    error,
  };
}

/**
 * Adds one turn's usage to the telemetry. After a compaction, the first request's cache writes are the tokens
 * re-written to cache; the first turn whose reads reach CACHE_RECOVERED_SHARE of its prompt ends the measurement,
 * which is returned (to be recorded on the compaction) — null while still measuring or when nothing is watched.
 */
export function accountCacheUsage(
  cache: CacheTelemetry,
  usage: TurnUsage,
): { compactionId: string; rewriteTokens: number; recoveryTurns: number } | null {
  cache.turns += 1;
  cache.cacheReadTokens += usage.cache_read_tokens;
  cache.cacheWriteTokens += usage.cache_write_tokens;
  cache.uncachedInputTokens += usage.uncached_input_tokens;
  cache.lastTurn = usage;
  const watching = cache.watching;
  if (!watching) return null;
  watching.turnsSince += 1;
  if (watching.rewriteTokens === null) watching.rewriteTokens = usage.cache_write_tokens;
  if (usage.prompt_tokens <= 0 || usage.cache_read_tokens < CACHE_RECOVERED_SHARE * usage.prompt_tokens) return null;
  cache.lastRecovery = {
    compactionId: watching.compactionId,
    rewriteTokens: watching.rewriteTokens,
    recoveryTurns: watching.turnsSince,
  };
  cache.watching = null;
  return cache.lastRecovery;
}
