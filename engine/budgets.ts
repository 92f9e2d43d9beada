// Tail and summary budgets (SPEC §6).
import { type CompressionConfig, clampTargetRatio } from './config.js';

const LEAN_TAIL_FRACTION = 0.025;
const LEAN_TAIL_MIN = 10_000;
const LEAN_TAIL_MAX = 25_000;
const TAIL_CAP_FRACTION = 0.2;
const SUMMARY_CONTENT_RATIO = 0.2;
const SUMMARY_FLOOR = 2_000;
const SUMMARY_CEILING_FRACTION = 0.05;
const SUMMARY_CEILING_MAX = 12_000;

/** SPEC §6.1: lean or legacy formula, then `max(1, min(b, floor(ctx × 0.20)))`. */
export function computeTailTokenBudget(
  contextLength: number,
  thresholdTokens: number,
  config: Pick<CompressionConfig, 'tailMode' | 'targetRatio'>,
): number {
  const b =
    config.tailMode === 'legacy'
      ? Math.floor(thresholdTokens * clampTargetRatio(config.targetRatio))
      : Math.max(LEAN_TAIL_MIN, Math.min(LEAN_TAIL_MAX, Math.floor(contextLength * LEAN_TAIL_FRACTION)));
  return Math.max(1, Math.min(b, Math.floor(contextLength * TAIL_CAP_FRACTION)));
}

/** SPEC §6.2: `min(floor(ctx × 0.05), 12,000)`. */
export function computeMaxSummaryTokens(contextLength: number): number {
  return Math.min(Math.floor(contextLength * SUMMARY_CEILING_FRACTION), SUMMARY_CEILING_MAX);
}

/**
 * Whether `computeSummaryBudget` has reached its ceiling at `contentTokens`: more content cannot change the
 * budget, so a caller summing the window may stop (the sum only grows).
 */
export function summaryBudgetSaturated(contentTokens: number, contextLength: number): boolean {
  return Math.floor(contentTokens * SUMMARY_CONTENT_RATIO) >= computeMaxSummaryTokens(contextLength);
}

/** SPEC §6.2: a target stated in the prompt; the 2,000 floor wins over the ceiling; negative content counts as 0. */
export function computeSummaryBudget(contentTokens: number, contextLength: number): number {
  const content = Number.isFinite(contentTokens) && contentTokens > 0 ? contentTokens : 0;
  const target = Math.min(Math.floor(content * SUMMARY_CONTENT_RATIO), computeMaxSummaryTokens(contextLength));
  return Math.max(SUMMARY_FLOOR, target);
}
