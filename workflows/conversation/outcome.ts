// How a compaction outcome changes the conversation's state and its engine, and the outcome of a compaction child
// that failed as a whole. Pure and deterministic; unit-tested without a server.
import { type CompactionOutcome, failedCompaction } from '../../contracts/compaction.js';
import type { ContextCompressor } from '../../engine/index.js';
import { absorbTotals, type CarriedState } from './state.js';

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
        // The body stays in PostgreSQL (claim check, DESIGN.md §3): the next compaction reads it from the log.
        summaryBody: '',
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
      // A native checkpoint's rows may be archived now: estimates count the live transcript again.
      state.nativeBase = null;
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
  return failedCompaction(compactionId, sessionId, error);
}
