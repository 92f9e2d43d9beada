// One summarizer attempt on a compaction's stored window (SPEC §8.5, §9.2), shared by the summarize phase and the
// replay of a fallback compaction: the same request (pruned window, previous summary, focus topic, context length),
// the same reply rules, the same quality gate (issue #15 §3). Retries belong to the workflow's policy; the guard
// heartbeats while the calls run.
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../../contracts/failures.js';
import { toStorableText } from '../../contracts/storableText.js';
import {
  appendToCriticalContext,
  buildSummaryRequest,
  type ChatMessage,
  gateItemCount,
  gateItems,
  gateRepromptBlock,
  interpretSummaryReply,
  missingGateItems,
  retentionShare,
  type Summarizer,
  type SummaryRequest,
} from '../../engine/index.js';
import type { CompactionRow } from '../../infra/db/schema.js';
import { LlmFailure } from '../../infra/llm/errors.js';
import type { CompactionSnapshot } from './record.js';

/** A gated summary body and the share of the gate items (issue #15 §3) before and after the gate. */
export interface GatedSummary {
  body: string;
  retentionBefore: number;
  retentionAfter: number;
}

/** One summarizer call: the reply body, or null for an empty reply; the summarizer's failures propagate. */
async function callOnce(summarizer: Summarizer, request: SummaryRequest): Promise<string | null> {
  let reply: unknown;
  try {
    reply = await summarizer(request);
  } catch (err) {
    if (err instanceof ApplicationFailure || err instanceof LlmFailure) throw err;
    throw ApplicationFailure.retryable(err instanceof Error ? err.message : String(err), 'SummarizerError');
  }
  const outcome = interpretSummaryReply(reply);
  return outcome.ok ? outcome.body : null;
}

/**
 * The §8.5 summary request of a compaction's pruned window (its budget, previous summary and focus topic); a
 * non-retryable `NoWindow` when the window has nothing to summarise.
 */
export function summaryRequestOf(
  record: CompactionRow,
  snapshot: CompactionSnapshot & { pruned: ChatMessage[] },
): SummaryRequest {
  const built = buildSummaryRequest(snapshot.pruned, snapshot.plan, {
    previousSummary: record.previous_summary,
    focusTopic: record.focus_topic,
    contextLength: snapshot.plan.contextLength,
  });
  if (built.noop !== false) {
    throw ApplicationFailure.nonRetryable('window has no turns to summarise', FailureType.NoWindow);
  }
  return built.request;
}

/**
 * Calls the summarizer and returns the storable, gated summary body. Rejects with a non-retryable `NoWindow` when
 * the window has nothing to summarise, a non-retryable `EmptySummary` for an empty reply, the summarizer's
 * classified failure as is, and a retryable `SummarizerError` for anything else it throws. Never returns error text.
 *
 * The quality gate (issue #15 §3): when the reply leaves out some of the window's pinned identifiers or the user's
 * constraints, the summarizer is asked once more, naming them; a failing, refused or empty second reply is ignored
 * (the first stands). What is still missing is appended under "## Critical Context".
 */
export async function summarizeWindow(
  summarizer: Summarizer,
  record: CompactionRow,
  snapshot: CompactionSnapshot & { pruned: ChatMessage[] },
  /** The activity's cancellation: the summarizer's calls stop with it. */
  signal?: AbortSignal,
): Promise<GatedSummary> {
  const request = { ...summaryRequestOf(record, snapshot), ...(signal ? { signal } : {}) };
  const draft = await callOnce(summarizer, request);
  if (draft === null) throw ApplicationFailure.nonRetryable('summary reply was empty', FailureType.EmptySummary);
  const window = snapshot.input.slice(snapshot.plan.headEnd, snapshot.plan.cut);
  const items = gateItems(window, record.previous_summary);
  const retentionBefore = retentionShare(draft, items);
  let body = draft;
  let missing = missingGateItems(draft, items);
  if (gateItemCount(missing) > 0) {
    const prompt = `${request.prompt}\n\n${gateRepromptBlock(draft, missing)}`;
    const second = await callOnce(summarizer, { ...request, prompt }).catch(() => null);
    if (second !== null && retentionShare(second, items) >= retentionBefore) {
      body = second;
      missing = missingGateItems(second, items);
    }
    body = appendToCriticalContext(body, missing);
  }
  // A summary is derived text: characters PostgreSQL cannot store are replaced, so it can always be committed.
  return { body: toStorableText(body), retentionBefore, retentionAfter: retentionShare(body, items) };
}
