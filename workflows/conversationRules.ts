// Pure rules of the conversation workflow: model window resolution, the user notice of a compaction outcome, how an
// outcome changes the state, and the cache accounting of chat turns. Deterministic; unit-tested without a server.
import { ApplicationFailure } from '@temporalio/workflow';
import type { CompactionOutcome } from '../contracts/compaction.js';
import type { CacheTelemetry, TurnUsage } from '../contracts/conversation.js';
import { FailureType } from '../contracts/failures.js';
import {
  type ContextCompressor,
  NOTICE_ABORT,
  NOTICE_FALLBACK,
  NOTICE_NOOP_NO_WINDOW,
  NOTICE_NOOP_SHORT,
  resolveUsableContextLength,
} from '../engine/index.js';
import { absorbTotals, type CarriedState } from './conversationState.js';

/** A turn whose cache reads cover at least this share of its prompt counts as "cache recovered" after a compaction. */
export const CACHE_RECOVERED_SHARE = 0.5;

/** SPEC §4.1 / §4.4 in workflow code: an unknown -900k id or a window below 64,000 is refused. */
export function resolveWindow(modelName: string, provider: string | null, explicit: number | null): number {
  try {
    return resolveUsableContextLength(modelName, provider, explicit);
  } catch (err) {
    throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.InvalidModel);
  }
}

/** SPEC §19 minimum-gain rule: the notice of a compaction that was not committed because it saved too little. */
export function noGainNotice(tokensBefore: number, tokensAfter: number): string {
  return (
    `Compaction not committed: the compacted transcript would not have been smaller ` +
    `(${tokensBefore.toLocaleString('en-US')} → ${tokensAfter.toLocaleString('en-US')} estimated tokens). ` +
    'No messages were changed.'
  );
}

/** SPEC §16.5: what the user is told about a compaction (no-op texts, abort, fallback, no gain), or null. */
export function noticeFor(
  outcome: Pick<CompactionOutcome, 'status' | 'noopReason'> & Partial<Pick<CompactionOutcome, 'stats'>>,
): string | null {
  if (outcome.status === 'noop') {
    return outcome.noopReason === 'insufficient_messages' ? NOTICE_NOOP_SHORT : NOTICE_NOOP_NO_WINDOW;
  }
  if (outcome.status === 'aborted') return NOTICE_ABORT;
  if (outcome.status === 'fallback') return NOTICE_FALLBACK;
  if (outcome.status === 'rejected' && outcome.stats) {
    return noGainNotice(outcome.stats.tokensBefore, outcome.stats.tokensAfter);
  }
  return null;
}

/**
 * How a compaction outcome changes the conversation and its engine. A committed one (LLM or fallback summary)
 * updates the engine (SPEC §8.8), the totals and the breaker's count; one that saved too little (`rejected`, SPEC §19)
 * is an ineffective strike when it was automatic; a failed one leaves everything as it was (§7.6).
 */
export function applyOutcome(
  state: CarriedState,
  engine: ContextCompressor,
  outcome: CompactionOutcome,
  context: { automatic: boolean; now: number },
): void {
  const tokensBefore = outcome.stats?.tokensBefore ?? state.activeTokens;
  // SPEC §7.6: after an automatic attempt (whatever its outcome) the next request goes out as is.
  if (context.automatic) state.autoSinceModelCall = true;
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
      if (outcome.totals) {
        absorbTotals(state, outcome.totals);
        state.lastCommitVersion = Math.max(state.lastCommitVersion, outcome.totals.version);
      }
      state.readingBaseTokens = state.activeTokens;
      state.userSinceCompaction = false;
      if (context.automatic) state.autoTimes.push(context.now);
      // The cached prefix beyond the system prompt is gone (SPEC §12.3): measure how it comes back.
      state.cache.watching = { compactionId: outcome.compactionId, turnsSince: 0, rewriteTokens: null };
      return;
    case 'noop':
      engine.recordNoop(outcome.noopReason as never, tokensBefore);
      return;
    case 'aborted':
      engine.recordAbort(outcome.summarizerCalled, tokensBefore);
      return;
    case 'rejected':
      if (context.automatic) engine.recordIneffective();
      return;
    default:
      // failed (the child or its commit failed): the transcript and previousSummary stay as they were (§7.6).
      return;
  }
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
    totals: null,
    similarity: null,
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
