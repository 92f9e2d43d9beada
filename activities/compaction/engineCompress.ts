// A compaction by a plugin or registered context engine (SPEC §10.3, issue #14 §1), in one activity: read the
// transcript (before the hygiene row), call the engine's `compress()`, check what it returned, and commit it with
// the same commit as the built-in phases (SPEC §13.2 in place / §13.3 rotation: one transaction, idempotent by
// compaction id, rows appended meanwhile kept after the output, every replaced row archived and searchable). An engine
// that cannot compress here — it does not load on this worker, it throws, or it returns a transcript the host refuses
// — writes nothing: the workflow runs the built-in phases instead, and the line says why (never silently).
import type { CommittedTotals, StoredStats } from '../../contracts/compaction.js';
import {
  contentFreeStats,
  type EngineCompressInput,
  type EngineCompressResult,
} from '../../contracts/compactionActivities.js';
import { chatMessageProblem } from '../../contracts/validation.js';
import {
  type ChatMessage,
  type CompressionStats,
  canonicalJson,
  carriedIndexes,
  engineCompressFailedWarning,
  engineNotFoundWarning,
  engineResultRefusedWarning,
  estimateMessagesTokensRough,
  isSummaryMessage,
  splitSummaryMessage,
  summaryText,
  unchangedStats,
  unpairedToolIds,
} from '../../engine/index.js';
import { commitCompaction } from '../../infra/db/compactionCommit/index.js';
import { isCommitted, updateCompaction } from '../../infra/db/compactions.js';
import { loadTranscript } from '../../infra/db/messages.js';
import type { CompactionRow } from '../../infra/db/schema.js';
import { type EngineDeps, engineForSession, logEngineFallback, tenantEngineSettings } from './engineChoice.js';
import { requireRecord } from './record.js';

/**
 * What is wrong with an engine's result, or null. The host commits only chat messages (SPEC §1.2) and no tool call
 * separated from its result that the input kept together (each call's results right after its message).
 */
export function engineOutputProblem(output: unknown, input: readonly ChatMessage[]): string | null {
  if (!Array.isArray(output)) return 'compress() must return an array of messages';
  if (output.length === 0) return 'compress() returned no messages';
  for (let i = 0; i < output.length; i++) {
    const problem = chatMessageProblem(output[i], `messages[${i}]`);
    if (problem) return problem;
  }
  const before = unpairedToolIds(input);
  const split = [...unpairedToolIds(output as ChatMessage[])].filter((id) => !before.has(id));
  if (split.length > 0) return `a tool call is separated from its result (${split.slice(0, 3).join(', ')})`;
  return null;
}

/** The summary a result carries: its last summary message that the input did not hold (null: none). */
function newSummary(input: readonly ChatMessage[], output: readonly ChatMessage[]) {
  const known = new Set(input.map((m) => canonicalJson(m)));
  for (let i = output.length - 1; i >= 0; i--) {
    const message = output[i] as ChatMessage;
    if (!isSummaryMessage(message) || known.has(canonicalJson(message))) continue;
    const body = splitSummaryMessage(message, null)?.body;
    if (body) return { summaryIndex: i, summaryBody: body };
  }
  return { summaryIndex: null, summaryBody: null };
}

/** A retry after the commit (or after a noop / rejected record was written) returns what was recorded. */
function recordedResult(record: CompactionRow): EngineCompressResult | null {
  const stats = record.stats as StoredStats | null;
  if (stats === null) return null;
  const status = isCommitted(record)
    ? 'committed'
    : record.status === 'noop' || record.status === 'rejected'
      ? record.status
      : null;
  if (status === null) return null;
  const { activeMessages: _a, commit: _c, replay: _r, ...compression } = stats;
  return {
    fallback: null,
    status,
    sessionId: record.new_session_id ?? record.session_id,
    stats: contentFreeStats(compression),
    totals: null,
    summarizerCalled: false,
  };
}

export function createEngineCompressActivities(deps: EngineDeps) {
  const { db } = deps;

  /**
   * Nothing was written: the built-in phases take over. The line (no content: it travels through Temporal and is a
   * notice) goes back; the reason (the engine's error may quote the transcript) stays in the record and the log.
   */
  async function fallBack(input: EngineCompressInput, line: string, reason?: string): Promise<EngineCompressResult> {
    logEngineFallback(line, { ...input, ...(reason ? { reason } : {}) });
    const recorded = reason ? `${line} Reason: ${reason}` : line;
    await updateCompaction(db, input.tenantId, input.compactionId, { engine_fallback: recorded });
    return { fallback: line };
  }

  async function finish(
    input: EngineCompressInput,
    status: 'noop' | 'rejected',
    stats: CompressionStats,
    summarizerCalled: boolean,
    sessionId: string,
  ): Promise<EngineCompressResult> {
    await updateCompaction(db, input.tenantId, input.compactionId, {
      status,
      engine: input.engine,
      stats: JSON.stringify(stats),
      completed_at: new Date(),
    });
    return { fallback: null, status, sessionId, stats: contentFreeStats(stats), totals: null, summarizerCalled };
  }

  return {
    async engineCompress(input: EngineCompressInput): Promise<EngineCompressResult> {
      const record = await requireRecord(db, input);
      const recorded = recordedResult(record);
      if (recorded) return recorded;
      const name = input.engine;
      const settings = await tenantEngineSettings(deps, input.tenantId);
      const target = { ...input, sessionId: record.session_id, name, config: settings.config };
      const { loaded, summarizerCalls } = await engineForSession(deps, target);
      if (loaded.origin === 'builtin') return fallBack(input, loaded.warning ?? engineNotFoundWarning(name));
      const transcript = await loadTranscript(db, input.tenantId, record.session_id);
      const end = input.beforeRowId ? transcript.findIndex((r) => r.id === input.beforeRowId) : -1;
      const rows = end >= 0 ? transcript.slice(0, end) : transcript;
      const messages = rows.map((r) => r.message);
      const tokensBefore = estimateMessagesTokensRough(messages);
      let output: unknown;
      try {
        // A copy: what the engine does to its input never reaches the commit's matching or the no-op check.
        output = await loaded.engine.compress(structuredClone(messages), {
          currentTokens: tokensBefore,
          ...(record.focus_topic ? { focusTopic: record.focus_topic } : {}),
          force: input.force,
        });
      } catch (err) {
        return fallBack(input, engineCompressFailedWarning(name), err instanceof Error ? err.message : String(err));
      }
      const problem = engineOutputProblem(output, messages);
      if (problem) return fallBack(input, engineResultRefusedWarning(name), problem);
      const result = output as ChatMessage[];
      const summarizerCalled = summarizerCalls.count > 0;
      if (canonicalJson(result) === canonicalJson(messages)) {
        const stats = unchangedStats(tokensBefore, { noop: 'no_compressible_window' });
        return finish(input, 'noop', stats, summarizerCalled, record.session_id);
      }
      const summary = newSummary(messages, result);
      const carried = new Set(carriedIndexes(rows, result));
      const stats: CompressionStats = {
        tokensBefore,
        tokensAfter: estimateMessagesTokensRough(result),
        prunedCount: 0,
        droppedCount: rows.filter((_, r) => !carried.has(r)).length,
        fallbackUsed: false,
        aborted: false,
        noop: false,
        summary: summary.summaryBody === null ? null : summaryText(summary.summaryBody),
      };
      // SPEC §19 minimum gain, and §11.3 step 3 for hygiene: a result that does not save enough is not adopted.
      if (input.requiredGain !== null && stats.tokensBefore - stats.tokensAfter < input.requiredGain) {
        return finish(input, 'rejected', stats, summarizerCalled, record.session_id);
      }
      const commit = {
        engine: name,
        compactionId: input.compactionId,
        expectedRowIds: rows.map((r) => r.id),
        inputMessages: messages,
        output: result,
        ...summary,
        fallbackUsed: false,
        stats: { ...stats, activeMessages: result.length },
        platform: input.platform,
      };
      const committed = await commitCompaction(db, input.tenantId, record, commit, input.newSessionId);
      const totals: CommittedTotals | null = committed.totals;
      return {
        fallback: null,
        status: 'committed',
        sessionId: committed.sessionId,
        stats: contentFreeStats(stats),
        totals,
        summarizerCalled,
      };
    },
  };
}
