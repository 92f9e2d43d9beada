// The built-in engine's state (SPEC §7.1) as plain JSON, so a host can carry it across restarts and
// continue-as-new (§13.4), plus the anti-thrash trip rule (§7.4) that every state change ends with.
import { RECOVERY_PROBE_S, TRIP_STRIKES } from './constants.js';

export interface CompressorState {
  compressionCount: number;
  previousSummary: string | null;
  lastPromptTokens: number;
  lastCompletionTokens: number;
  lastTotalTokens: number;
  awaitingVerdict: boolean;
  ineffectiveStrikes: number;
  fallbackStreak: number;
  /** Absolute clock values in ms (§7.1), null when not set. */
  trippedUntil: number | null;
  summaryCooldownUntil: number | null;
  structuralBackoffUntil: number | null;
}

export const INITIAL_COMPRESSOR_STATE: Readonly<CompressorState> = Object.freeze({
  compressionCount: 0,
  previousSummary: null,
  lastPromptTokens: 0,
  lastCompletionTokens: 0,
  lastTotalTokens: 0,
  awaitingVerdict: false,
  ineffectiveStrikes: 0,
  fallbackStreak: 0,
  trippedUntil: null,
  summaryCooldownUntil: null,
  structuralBackoffUntil: null,
});

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : 0;
}

function deadline(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** Lenient: every missing or malformed field takes its initial value. Never throws. */
export function normalizeCompressorState(partial?: unknown): CompressorState {
  const s = (partial !== null && typeof partial === 'object' ? partial : {}) as Record<string, unknown>;
  return {
    compressionCount: count(s.compressionCount),
    previousSummary: typeof s.previousSummary === 'string' ? s.previousSummary : null,
    lastPromptTokens: count(s.lastPromptTokens),
    lastCompletionTokens: count(s.lastCompletionTokens),
    lastTotalTokens: count(s.lastTotalTokens),
    awaitingVerdict: s.awaitingVerdict === true,
    ineffectiveStrikes: count(s.ineffectiveStrikes),
    fallbackStreak: count(s.fallbackStreak),
    trippedUntil: deadline(s.trippedUntil),
    summaryCooldownUntil: deadline(s.summaryCooldownUntil),
    structuralBackoffUntil: deadline(s.structuralBackoffUntil),
  };
}

/** §7.4: trip when a counter reached 2 (keeping an existing deadline), untrip when both are below 2. */
export function evaluateTrip(state: CompressorState, now: number): void {
  if (state.ineffectiveStrikes >= TRIP_STRIKES || state.fallbackStreak >= TRIP_STRIKES) {
    if (state.trippedUntil === null) state.trippedUntil = now + RECOVERY_PROBE_S * 1000;
  } else {
    state.trippedUntil = null;
  }
}

/** True while `until` is set and not yet reached. */
export function isActive(until: number | null, now: number): boolean {
  return until !== null && now < until;
}
