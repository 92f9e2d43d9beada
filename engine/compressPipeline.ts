// `ContextCompressor.compress()` (SPEC §8.1 S0–S9): the pure phase functions of ./phases.ts composed around one
// summarizer call, the outcome applied through the engine's public state-update methods — the same ones a host that
// runs the phases elsewhere (Temporal activities) uses, so both paths update the engine alike.
import type { NoopReason } from './boundaries.js';
import type { CompactionRecord } from './compressor.js';
import type { CompressionConfig } from './config.js';
import type { SummaryFailureClass } from './fallbackSummary.js';
import {
  buildFallbackSummary,
  buildSummaryRequest,
  type CompactionLimits,
  compactionStats,
  estimateRowTokens,
  interpretSummaryReply,
  outputTokens,
  planCompaction,
  prunePhase,
  reassemblePhase,
} from './phases.js';
import type { ChatMessage, CompressOptions, Summarizer, SummaryRequest } from './types.js';

/** What the summarizer step produced (§8.5.6); `summarizerCalled` decides the cooldown (§7.5). */
export type SummaryAttempt =
  | { ok: true; body: string; summarizerCalled: true }
  | { ok: false; failureClass: SummaryFailureClass; summarizerCalled: boolean };

/** What `compress()` needs of its engine (ContextCompressor). */
export interface CompressingEngine {
  readonly config: CompressionConfig;
  readonly contextLength: number;
  readonly previousSummary: string | null;
  compactionLimits(): CompactionLimits;
  beginCompaction(options: { force?: boolean }): void;
  summaryCooldownActive(): boolean;
  recordNoop(reason: NoopReason, tokensBefore: number): void;
  recordAbort(summarizerCalled: boolean, tokensBefore: number, failureClass?: SummaryFailureClass): void;
  recordCompaction(record: CompactionRecord): void;
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

/** §8.5.6: at most one call; rejections, non-strings and empty replies are failures, never summaries. */
async function attemptSummary(
  engine: CompressingEngine,
  summarize: Summarizer,
  request: SummaryRequest,
): Promise<SummaryAttempt> {
  if (engine.summaryCooldownActive()) return { ok: false, failureClass: 'cooldown', summarizerCalled: false };
  let reply: unknown;
  try {
    reply = await summarize(request);
  } catch {
    return { ok: false, failureClass: 'error', summarizerCalled: true };
  }
  const outcome = interpretSummaryReply(reply);
  if (outcome.ok) return { ok: true, body: outcome.body, summarizerCalled: true };
  return { ok: false, failureClass: outcome.failureClass, summarizerCalled: true };
}

/** §8.1 S0–S9 on `messages`; the engine's state is updated through its record methods. */
export async function compressTranscript(
  engine: CompressingEngine,
  summarize: Summarizer,
  messages: readonly ChatMessage[],
  options: CompressOptions = {},
): Promise<ChatMessage[]> {
  const noop = (reason: NoopReason, tokensBefore: number): ChatMessage[] => {
    engine.recordNoop(reason, tokensBefore);
    return messages.slice();
  };
  engine.beginCompaction({ force: options.force === true });
  const rowTokens = estimateRowTokens(messages);
  const tokensBefore = sum(rowTokens);
  const previousSummary = engine.previousSummary;
  const plan = planCompaction(messages, engine.compactionLimits());
  if (plan.noop !== false) return noop(plan.noop, tokensBefore);
  const pruned = prunePhase(messages, plan);
  const summaryPlan = buildSummaryRequest(pruned.messages, plan, {
    previousSummary,
    focusTopic: options.focusTopic ?? null,
    contextLength: engine.contextLength,
  });
  if (summaryPlan.noop !== false) return noop(summaryPlan.noop, tokensBefore);
  const attempt = await attemptSummary(engine, summarize, summaryPlan.request);
  const failureClass = attempt.ok ? undefined : attempt.failureClass;
  if (failureClass !== undefined && engine.config.abortOnSummaryFailure) {
    engine.recordAbort(attempt.summarizerCalled, tokensBefore, failureClass);
    return messages.slice();
  }
  const summaryBody = attempt.ok
    ? attempt.body
    : buildFallbackSummary(messages, plan, { previousSummary, failureClass: attempt.failureClass });
  const output = reassemblePhase(pruned.messages, messages, plan, summaryBody, { previousSummary });
  const stats = compactionStats({
    tokensBefore,
    tokensAfter: outputTokens(output, messages, rowTokens, plan),
    output,
    prunedCount: pruned.prunedCount,
    plan,
    fallbackUsed: !attempt.ok,
    summaryBody,
  });
  engine.recordCompaction({
    summaryBody,
    fallbackUsed: !attempt.ok,
    summarizerCalled: attempt.summarizerCalled,
    failureClass,
    stats,
  });
  return output;
}
