// The compaction phases of SPEC §8.1 as separately callable pure steps with plain-JSON inputs and outputs, so
// that a host can run each one as its own unit of work (e.g. a Temporal activity). `ContextCompressor.compress`
// composes exactly these functions.
import { type Boundaries, findBoundaries, type NoopReason } from './boundaries.js';
import { computeSummaryBudget, summaryBudgetSaturated } from './budgets.js';
import { buildFallbackSummaryBody, type SummaryFailureClass } from './fallbackSummary.js';
import { normalizeSummaryBody, summaryText } from './messages.js';
import { type PruneResult, pruneToolOutputs } from './pruning.js';
import { reassemble } from './reassembly.js';
import { buildSummaryPrompt, classifyWindow, normalizeFocusTopic, windowHasTurns } from './summaryPrompt.js';
import { estimateMessagesTokensRough, estimateMessageTokensRough } from './tokens.js';
import type { ChatMessage, CompressionStats, SummaryRequest } from './types.js';

/** Inputs of the boundary phase: the configured protections, the tail budget and the engine's previous summary. */
export interface CompactionLimits {
  protectFirstN: number;
  protectLastN: number;
  minTailUserMessages: number;
  tailTokenBudget: number;
  previousSummary: string | null;
}

/** Result of S1–S4: the window `[headEnd, cut)`, the re-insert index (§8.3.5) or the no-op reason. */
export type CompactionPlan = Boundaries;

/**
 * S1–S4 (Phase 2) on the unpruned input, plus the no-op of §8.5.1 (a window with nothing to serialise): pruning
 * only rewrites tool output, so that outcome is already known here and a host can stop before any other phase.
 */
export function planCompaction(messages: readonly ChatMessage[], limits: CompactionLimits): CompactionPlan {
  const plan = findBoundaries(messages, limits);
  if (plan.noop !== false) return plan;
  if (windowHasTurns(messages, limits.previousSummary, plan.headEnd, plan.cut)) return plan;
  return { ...plan, reinsertIndex: null, noop: 'no_compressible_window' };
}

/** S5 (Phase 1) on a working copy. */
export function prunePhase(messages: readonly ChatMessage[], plan: Pick<CompactionPlan, 'cut'>): PruneResult {
  return pruneToolOutputs(messages, plan.cut);
}

export interface SummaryRequestOptions {
  /** The engine's previous summary (splits merged summaries, §8.5.1). */
  previousSummary: string | null;
  focusTopic?: string | null;
  contextLength: number;
  /** `estimateMessagesTokensRough` of the pruned window when the caller already knows it (§8.5.3). */
  windowTokens?: number;
}

/** S6 input: the summarizer request, or the no-op of §8.5.1 when the window has nothing to serialise. */
export type SummaryRequestPlan =
  | { noop: false; request: SummaryRequest }
  | { noop: Extract<NoopReason, 'no_compressible_window'> };

/**
 * §8.5.3 content tokens of the window as far as the budget needs them: the sum stops once the budget has reached
 * its ceiling (`computeSummaryBudget` gives the same result as for the full sum).
 */
export function budgetContentTokens(window: readonly ChatMessage[], contextLength: number): number {
  let total = 0;
  for (const row of window) {
    total += estimateMessageTokensRough(row);
    if (summaryBudgetSaturated(total, contextLength)) break;
  }
  return total;
}

/** §8.5.1–§8.5.4 on the pruned window. */
export function buildSummaryRequest(
  prunedMessages: readonly ChatMessage[],
  plan: Pick<CompactionPlan, 'headEnd' | 'cut'>,
  options: SummaryRequestOptions,
): SummaryRequestPlan {
  const window = prunedMessages.slice(plan.headEnd, plan.cut);
  const { previous, turns } = classifyWindow(window, options.previousSummary);
  if (turns.length === 0) return { noop: 'no_compressible_window' };
  const contentTokens = options.windowTokens ?? budgetContentTokens(window, options.contextLength);
  const budgetTokens = computeSummaryBudget(contentTokens, options.contextLength);
  const focusTopic = normalizeFocusTopic(options.focusTopic);
  const prompt = buildSummaryPrompt({ turns, previous, budgetTokens, focusTopic });
  const request: SummaryRequest = { prompt, budgetTokens, previousSummary: previous, turnCount: turns.length };
  if (focusTopic !== null) request.focusTopic = focusTopic;
  return { noop: false, request };
}

export type SummaryReplyOutcome = { ok: true; body: string } | { ok: false; failureClass: 'empty' };

/** §8.5.6: a non-string reply or one that normalises to nothing is the failure class `empty`. */
export function interpretSummaryReply(reply: unknown): SummaryReplyOutcome {
  if (typeof reply !== 'string') return { ok: false, failureClass: 'empty' };
  const body = normalizeSummaryBody(reply);
  return body === '' ? { ok: false, failureClass: 'empty' } : { ok: true, body };
}

export interface FallbackOptions {
  previousSummary: string | null;
  failureClass: SummaryFailureClass;
}

/** §9.5: the fallback summary body, from the input's (unpruned) window. */
export function buildFallbackSummary(
  inputMessages: readonly ChatMessage[],
  plan: Pick<CompactionPlan, 'headEnd' | 'cut'>,
  options: FallbackOptions,
): string {
  return buildFallbackSummaryBody({
    window: inputMessages.slice(plan.headEnd, plan.cut),
    previousSummary: options.previousSummary,
    failureClass: options.failureClass,
  });
}

/** S7–S8 (Phase 4 and sanitising). */
export function reassemblePhase(
  prunedMessages: readonly ChatMessage[],
  inputMessages: readonly ChatMessage[],
  plan: Pick<CompactionPlan, 'headEnd' | 'cut' | 'reinsertIndex'>,
  summaryBody: string,
  options: { previousSummary: string | null },
): ChatMessage[] {
  return reassemble({
    working: prunedMessages,
    input: inputMessages,
    headEnd: plan.headEnd,
    cut: plan.cut,
    reinsertIndex: plan.reinsertIndex,
    summaryBody,
    previousSummary: options.previousSummary,
  });
}

/** Per-row token estimates of §3.2; their sum is `estimateMessagesTokensRough`. */
export function estimateRowTokens(messages: readonly ChatMessage[]): number[] {
  return messages.map(estimateMessageTokensRough);
}

/** §8.5.3 content tokens of the pruned window, reusing the input's row estimates for rows Phase 1 kept. */
export function prunedWindowTokens(
  input: readonly ChatMessage[],
  inputRowTokens: readonly number[],
  pruned: readonly ChatMessage[],
  plan: Pick<CompactionPlan, 'headEnd' | 'cut'>,
): number {
  let total = 0;
  for (let i = plan.headEnd; i < plan.cut; i++) {
    const row = pruned[i] as ChatMessage;
    total += row === input[i] ? (inputRowTokens[i] as number) : estimateMessageTokensRough(row);
  }
  return total;
}

/**
 * `estimateMessagesTokensRough(output)`, reusing the input's row estimates for the head and tail rows the output
 * took over unchanged (the same objects); only new rows (summary, stubs, changed rows) are estimated.
 */
export function outputTokens(
  output: readonly ChatMessage[],
  input: readonly ChatMessage[],
  inputRowTokens: readonly number[],
  plan: Pick<CompactionPlan, 'headEnd' | 'cut'>,
): number {
  const known = new Map<ChatMessage, number>();
  for (let i = 0; i < plan.headEnd; i++) known.set(input[i] as ChatMessage, inputRowTokens[i] as number);
  for (let i = plan.cut; i < input.length; i++) known.set(input[i] as ChatMessage, inputRowTokens[i] as number);
  let total = 0;
  for (const row of output) total += known.get(row) ?? estimateMessageTokensRough(row);
  return total;
}

/** §8.8 statistics of a compaction; `tokensAfter` is estimated from `output` unless the caller knows it. */
export function compactionStats(input: {
  tokensBefore: number;
  tokensAfter?: number;
  output: readonly ChatMessage[];
  prunedCount: number;
  plan: Pick<CompactionPlan, 'headEnd' | 'cut'>;
  fallbackUsed: boolean;
  summaryBody: string;
}): CompressionStats {
  return {
    tokensBefore: input.tokensBefore,
    tokensAfter: input.tokensAfter ?? estimateMessagesTokensRough(input.output),
    prunedCount: input.prunedCount,
    droppedCount: input.plan.cut - input.plan.headEnd,
    fallbackUsed: input.fallbackUsed,
    aborted: false,
    noop: false,
    summary: summaryText(input.summaryBody),
  };
}

/** §8.8 statistics of a no-op or an abort: nothing changed. */
export function unchangedStats(
  tokensBefore: number,
  outcome: { noop: NoopReason } | { aborted: true },
): CompressionStats {
  return {
    tokensBefore,
    tokensAfter: tokensBefore,
    prunedCount: 0,
    droppedCount: 0,
    fallbackUsed: false,
    aborted: 'aborted' in outcome,
    noop: 'noop' in outcome ? outcome.noop : false,
    summary: null,
  };
}
