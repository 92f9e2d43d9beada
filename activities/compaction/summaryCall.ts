// One summarizer attempt on a compaction's stored window (SPEC §8.5, §9.2), shared by the summarize phase and the
// replay of a fallback compaction: the same request (pruned window, previous summary, focus topic, context length),
// the same reply rules. Retries belong to the workflow's policy; the guard heartbeats while the call runs.
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../../contracts/failures.js';
import { toStorableText } from '../../contracts/storableText.js';
import { buildSummaryRequest, type ChatMessage, interpretSummaryReply, type Summarizer } from '../../engine/index.js';
import type { CompactionRow } from '../../infra/db/schema.js';
import { LlmFailure } from '../../infra/llm/errors.js';
import type { CompactionSnapshot } from './record.js';

/**
 * Calls the summarizer once and returns the storable summary body. Rejects with a non-retryable `NoWindow` when the
 * window has nothing to summarise, a non-retryable `EmptySummary` for an empty reply, the summarizer's classified
 * failure as is, and a retryable `SummarizerError` for anything else it throws. Never returns error text.
 */
export async function summarizeWindow(
  summarizer: Summarizer,
  record: CompactionRow,
  snapshot: CompactionSnapshot & { pruned: ChatMessage[] },
): Promise<string> {
  const built = buildSummaryRequest(snapshot.pruned, snapshot.plan, {
    previousSummary: record.previous_summary,
    focusTopic: record.focus_topic,
    contextLength: snapshot.plan.contextLength,
  });
  if (built.noop !== false) {
    throw ApplicationFailure.nonRetryable('window has no turns to summarise', FailureType.NoWindow);
  }
  let reply: unknown;
  try {
    reply = await summarizer(built.request);
  } catch (err) {
    if (err instanceof ApplicationFailure || err instanceof LlmFailure) throw err;
    throw ApplicationFailure.retryable(err instanceof Error ? err.message : String(err), 'SummarizerError');
  }
  const outcome = interpretSummaryReply(reply);
  if (!outcome.ok) throw ApplicationFailure.nonRetryable('summary reply was empty', FailureType.EmptySummary);
  // A summary is derived text: characters PostgreSQL cannot store are replaced, so it can always be committed.
  return toStorableText(outcome.body);
}
