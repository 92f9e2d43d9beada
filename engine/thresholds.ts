// Threshold derivation (SPEC §5): per-model overrides, the 64K floor with its 85 % cap, the small-context floor,
// the Codex autoraise and the absolute cap.
import type { CompressionConfig } from './config.js';
import {
  CODEX_GPT55_AUTORAISE_PERCENT,
  MINIMUM_CONTEXT_LENGTH,
  SMALL_CONTEXT_BOUNDARY,
  TRIGGER_CAP_FRACTION,
} from './constants.js';
import { findBestKeyMatch } from './modelKeyMatch.js';
import { codexAutoraiseApplies } from './modelRegistry.js';

function isUsablePercent(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= 1;
}

/** SPEC §5.2. Entries with a value outside (0, 1] are ignored one by one. */
export function resolveModelThreshold(
  model: string,
  thresholds: Record<string, number> | undefined,
  fallback: number,
  provider?: string,
): number {
  if (!thresholds || typeof thresholds !== 'object' || typeof model !== 'string' || model === '') return fallback;
  const match = findBestKeyMatch(model, provider, Object.entries(thresholds), isUsablePercent);
  return match ? match.value : fallback;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/** SPEC §5.4; a `maxOutputTokens` that is not a positive integer is ignored (§18.12). */
export function computeThresholdTokens(contextLength: number, percent: number, maxOutputTokens?: number): number {
  const reserved = isPositiveInteger(maxOutputTokens) ? contextLength - maxOutputTokens : 0;
  const eff = reserved > 0 ? reserved : contextLength;
  const v = Math.floor(eff * percent);
  const floored = Math.max(v, MINIMUM_CONTEXT_LENGTH);
  const cap = Math.floor(eff * TRIGGER_CAP_FRACTION);
  let result = floored;
  if (floored > v && floored > cap) result = Math.max(v, cap);
  if (result >= eff) result = Math.max(1, Math.min(cap, eff - 1));
  return result;
}

export interface DeriveThresholdsInput {
  model: string;
  contextLength: number;
  provider?: string;
  config: CompressionConfig;
}

export interface DerivedThresholds {
  thresholdPercent: number;
  thresholdTokens: number;
}

/** The percent after steps 1–2 of §5.1 (global threshold, then the per-model override). */
export function configuredThresholdPercent(input: Omit<DeriveThresholdsInput, 'contextLength'>): number {
  return resolveModelThreshold(input.model, input.config.modelThresholds, input.config.threshold, input.provider);
}

/** §5.1 steps 3–4: the Codex autoraise, then the small-context floor. */
function raisedPercent(pct: number, input: DeriveThresholdsInput): number {
  let raised = pct;
  if (codexAutoraiseApplies(input.model, input.provider, input.config)) {
    raised = Math.max(raised, CODEX_GPT55_AUTORAISE_PERCENT);
  }
  const floor = input.config.smallContextFloor;
  if (input.contextLength < SMALL_CONTEXT_BOUNDARY && floor > 0) raised = Math.max(raised, floor);
  return raised;
}

/** §5.5: `min(t, threshold_tokens)` when the cap is a positive integer, then `min(t, ctx)`. */
function applyAbsoluteCap(tokens: number, cap: number | null, contextLength: number): number {
  const capped = isPositiveInteger(cap) ? Math.min(tokens, cap) : tokens;
  return Math.min(capped, contextLength);
}

/** The full derivation order of SPEC §5.1, always from the raw configuration (§4.6). */
export function deriveThresholds(input: DeriveThresholdsInput): DerivedThresholds {
  const thresholdPercent = raisedPercent(configuredThresholdPercent(input), input);
  const tokens = computeThresholdTokens(input.contextLength, thresholdPercent);
  const thresholdTokens = applyAbsoluteCap(tokens, input.config.thresholdTokens, input.contextLength);
  return { thresholdPercent, thresholdTokens };
}
