// The compaction child workflow (DESIGN.md §3): ID `compact:<tenant>:<session>:<n>`, four phase activities with
// explicit timeouts and bounded retries; intermediate results live in the `compactions` row. The summary failure
// policy of SPEC §9 (fallback summary or abort) is decided here; nothing is ever dropped without a summary.
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  setCurrentDetails,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { CompactionActivities } from '../activities/compaction/index.js';
import {
  type CompactionInput,
  type CompactionOutcome,
  type CompactionTimeouts,
  failedCompaction,
} from '../contracts/compaction.js';
import type { EngineCompressResult } from '../contracts/compactionActivities.js';
import { FailureType } from '../contracts/failures.js';
import type { SummaryFailureClass } from '../engine/index.js';
import { phaseActivityOptions, summaryActivityOptions } from './activityOptions.js';
import {
  CompactionStatus as CompactionStatusKey,
  CompactionTrigger as CompactionTriggerKey,
} from './searchAttributes.js';

export { DEFAULT_COMPACTION_TIMEOUTS } from './activityOptions.js';

/** The record is created by align itself (one activity and one workflow task fewer per compaction, issue #11 §5). */
const ALIGN_BEGINS_PATCH = 'align-begins';

function phases(t: CompactionTimeouts) {
  const phase = proxyActivities<CompactionActivities>(phaseActivityOptions(t));
  const summary = proxyActivities<CompactionActivities>(summaryActivityOptions(t));
  return { phase, summary };
}

function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

function failureType(err: unknown): string | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? null) : null;
}

type Phases = ReturnType<typeof phases>;

/** The engine's compaction (SPEC §10.3): one activity, which commits what the engine returned or falls back. */
function compressWithEngine(
  summary: Phases['summary'],
  input: CompactionInput,
  engine: string,
): Promise<EngineCompressResult> {
  return summary.engineCompress({
    tenantId: input.tenantId,
    compactionId: input.compactionId,
    engine,
    requiredGain: input.requiredGain,
    newSessionId: input.inPlace ? null : input.newSessionId,
    platform: input.platform,
    contextLength: input.contextLength,
    beforeRowId: input.beforeRowId,
    force: input.trigger === 'manual',
  });
}

function engineOutcome(
  outcome: CompactionOutcome,
  result: Exclude<EngineCompressResult, { fallback: string }>,
  mark: (status: string, details: string) => void,
): CompactionOutcome {
  Object.assign(outcome, {
    status: result.status,
    noopReason: result.status === 'noop' ? result.stats.noop || 'no_compressible_window' : null,
    sessionId: result.sessionId,
    summarizerCalled: result.summarizerCalled,
    stats: result.stats,
    totals: result.totals,
  });
  mark(result.status, `${result.status}: ${result.stats.tokensBefore} → ${result.stats.tokensAfter} estimated tokens`);
  return outcome;
}

export async function compactionWorkflow(input: CompactionInput): Promise<CompactionOutcome> {
  const { phase, summary } = phases(input.timeouts);
  const ref = { tenantId: input.tenantId, compactionId: input.compactionId };
  const outcome: CompactionOutcome = failedCompaction(input.compactionId, input.sessionId, null);
  const mark = (status: string, details: string) => {
    upsertSearchAttributes([
      { key: CompactionStatusKey, value: status },
      { key: CompactionTriggerKey, value: input.trigger },
    ]);
    setCurrentDetails(details);
  };
  mark('running', `Compaction #${input.seq} (${input.trigger}) of session ${input.sessionId}: aligning`);

  const { sessionId, conversationId, seq, trigger, inPlace, focusTopic, previousSummary } = input;
  const begin = { sessionId, conversationId, seq, trigger, inPlace, focusTopic, previousSummary };
  const alignInput = {
    ...ref,
    ...input.limits,
    contextLength: input.contextLength,
    beforeRowId: input.beforeRowId,
  };
  let aligned: Awaited<ReturnType<typeof phase.align>>;
  if (patched(ALIGN_BEGINS_PATCH)) {
    aligned = await phase.align({ ...alignInput, begin, chooseEngine: true });
  } else {
    await phase.beginCompaction({ ...ref, ...begin });
    aligned = await phase.align(alignInput);
  }
  if (aligned.engine !== undefined) {
    // SPEC §10.3: the tenant's engine compresses; if it cannot, the built-in phases run with the line recorded. An
    // activity that failed for good (the store, not the engine) ends the compaction as `failed`, like a failed commit:
    // it may have committed before its result was lost, so the built-in phases must not run on top of it.
    mark('running', `Compressing with context engine '${aligned.engine}'`);
    let result: EngineCompressResult;
    try {
      result = await compressWithEngine(summary, input, aligned.engine);
    } catch (err) {
      outcome.error = failureMessage(err);
      await phase.recordCompactionEnd({ ...ref, status: 'failed', error: outcome.error, failureClass: null });
      mark('failed', `Failed: ${outcome.error}`);
      return outcome;
    }
    if (result.fallback === null) return engineOutcome(outcome, result, mark);
    outcome.engineWarning = result.fallback;
    aligned = await phase.align({ ...alignInput, engineFallback: result.fallback });
  } else if (aligned.engineWarning) {
    outcome.engineWarning = aligned.engineWarning;
  }
  if (aligned.noop !== false) {
    outcome.status = 'noop';
    outcome.noopReason = aligned.noop;
    mark('noop', `No-op (${aligned.noop}): ${aligned.inputRows} messages, nothing outside the protected head and tail`);
    return outcome;
  }

  mark('running', `Pruning; window [${aligned.headEnd}, ${aligned.cut}) of ${aligned.inputRows} messages`);
  await phase.prune(ref);

  let failureClass: SummaryFailureClass | null = null;
  if (!input.summaryAllowed) {
    failureClass = 'cooldown';
  } else {
    mark('running', `Summarizing ${aligned.cut - aligned.headEnd} messages`);
    try {
      const result = await summary.summarize(ref);
      outcome.summarizerCalled = result.summarizerCalled;
      if (!result.ok) {
        failureClass = result.failureClass;
        outcome.error = result.reason;
      }
    } catch (err) {
      outcome.summarizerCalled = true;
      failureClass = failureType(err) === FailureType.EmptySummary ? 'empty' : 'error';
      outcome.error = failureMessage(err);
    }
  }
  outcome.failureClass = failureClass;

  if (failureClass !== null && input.abortOnSummaryFailure) {
    await phase.recordCompactionEnd({ ...ref, status: 'aborted', error: outcome.error, failureClass });
    outcome.status = 'aborted';
    mark('aborted', `Aborted: summary failed (${failureClass}); transcript unchanged`);
    return outcome;
  }

  mark('running', failureClass ? `Reassembling with the fallback summary (${failureClass})` : 'Reassembling');
  try {
    const result = await phase.reassemble({
      ...ref,
      fallbackFailureClass: failureClass,
      requiredGain: input.requiredGain,
      newSessionId: input.inPlace ? null : input.newSessionId,
      platform: input.platform,
    });
    Object.assign(outcome, {
      status: result.status,
      sessionId: result.sessionId,
      fallbackUsed: result.status === 'fallback',
      stats: result.stats,
      retention: result.retention ?? null,
      totals: result.totals,
      similarity: result.similarity,
    });
    mark(
      result.status,
      `${result.status}: ${result.stats.tokensBefore} → ${result.stats.tokensAfter} estimated tokens, ` +
        `${result.stats.droppedCount} messages summarised`,
    );
    return outcome;
  } catch (err) {
    outcome.error = failureMessage(err);
    await phase.recordCompactionEnd({ ...ref, status: 'failed', error: outcome.error, failureClass });
    outcome.status = 'failed';
    mark('failed', `Failed: ${outcome.error}; transcript unchanged`);
    return outcome;
  }
}
