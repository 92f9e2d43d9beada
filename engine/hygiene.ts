// Gateway session hygiene (SPEC §11): whether to compact before the agent turn, and what to do with the result.
import {
  HYGIENE_FAILURE_COOLDOWN_S,
  HYGIENE_MIN_MESSAGES,
  HYGIENE_TRIGGER_FRACTION,
  HYGIENE_WARNING_FRACTION,
  NOTICE_HYGIENE_FAILED,
  NOTICE_HYGIENE_WARNING,
} from './constants.js';
import { estimateMessagesTokensRough, messagesTokensExceed } from './tokens.js';
import type { ChatMessage } from './types.js';

const DEFAULT_HARD_MESSAGE_LIMIT = 5_000;

export type HygieneTokenSource = 'actual' | 'estimated';

export interface GatewayHygieneInput {
  /** The transcript as it would be replayed, without the incoming message. */
  history: readonly ChatMessage[];
  contextLength: number;
  lastPromptTokens?: number;
  enabled?: boolean;
  hardMessageLimit?: number;
}

export interface GatewayHygieneDecision {
  run: boolean;
  tokens: number;
  threshold: number;
  source: HygieneTokenSource;
}

/** floor(ctx × 0.85): the fixed hygiene trigger (SPEC §11.1). */
export function hygieneTriggerThreshold(contextLength: number): number {
  return Math.floor(contextLength * HYGIENE_TRIGGER_FRACTION);
}

/** floor(ctx × 0.95): the "close to the limit" warning line (SPEC §11.3 step 6). */
export function hygieneWarningThreshold(contextLength: number): number {
  return Math.floor(contextLength * HYGIENE_WARNING_FRACTION);
}

/** SPEC §11.2. `tokens`, `threshold` and `source` are returned even when `run` is false. */
export function shouldRunGatewayHygiene(input: GatewayHygieneInput): GatewayHygieneDecision {
  const lastPromptTokens = input.lastPromptTokens ?? 0;
  return gatewayHygieneDecision({
    historyLength: input.history.length,
    // Only estimated when there is no real reading (§3.4).
    historyTokens: lastPromptTokens > 0 ? 0 : estimateMessagesTokensRough(input.history),
    contextLength: input.contextLength,
    lastPromptTokens,
    enabled: input.enabled,
    hardMessageLimit: input.hardMessageLimit,
  });
}

/**
 * SPEC §11.2 from running totals: the estimate of a history is additive over its messages, so a host that keeps
 * the count and the summed estimate of the transcript (e.g. workflow state) decides without loading it.
 */
export function gatewayHygieneDecision(input: {
  historyLength: number;
  historyTokens: number;
  contextLength: number;
  lastPromptTokens?: number;
  enabled?: boolean;
  hardMessageLimit?: number;
}): GatewayHygieneDecision {
  const threshold = hygieneTriggerThreshold(input.contextLength);
  const lastPromptTokens = input.lastPromptTokens ?? 0;
  const actual = lastPromptTokens > 0;
  const tokens = actual ? lastPromptTokens : input.historyTokens;
  const hardMessageLimit = input.hardMessageLimit ?? DEFAULT_HARD_MESSAGE_LIMIT;
  const count = input.historyLength;
  const run =
    input.enabled !== false && count >= HYGIENE_MIN_MESSAGES && (tokens >= threshold || count >= hardMessageLimit);
  return { run, tokens, threshold, source: actual ? 'actual' : 'estimated' };
}

/** What `compress()` (or the commit after it) did during a hygiene run (SPEC §11.3 steps 2–5). */
export type HygieneCompressResult =
  | { kind: 'compacted'; messages: readonly ChatMessage[] }
  | { kind: 'noop' }
  | { kind: 'aborted' }
  | { kind: 'failed' }
  | { kind: 'commit_failed' };

export type HygieneResolution = 'adopted' | 'noop' | 'aborted' | 'rejected_larger' | 'failed' | 'commit_failed';

export interface HygieneOutcomeInput {
  history: readonly ChatMessage[];
  /** `tokens` of the decision (§11.2). */
  tokens: number;
  contextLength: number;
  result: HygieneCompressResult;
}

export interface HygieneOutcome {
  adopt: boolean;
  resolution: HygieneResolution;
  /** The transcript to continue with: the compacted list when adopted, else the history unchanged. */
  messages: readonly ChatMessage[];
  /** Hygiene cooldown to set, in seconds (0 = none). */
  cooldownSeconds: number;
  /** A compaction that is not adopted: the host restores `previousSummary` (§7.6). */
  restorePreviousSummary: boolean;
  /** §11.3 step 6 `after`. */
  afterTokens: number;
  /** Notices to show, in order: the failure notice (step 5), then the warning (step 6). */
  notices: string[];
}

function resolve(input: HygieneOutcomeInput): { resolution: HygieneResolution; afterTokens: number } {
  const { result } = input;
  if (result.kind !== 'compacted') return { resolution: result.kind, afterTokens: input.tokens };
  const after = estimateMessagesTokensRough(result.messages);
  if (messagesTokensExceed(input.history, after)) return { resolution: 'adopted', afterTokens: after };
  return { resolution: 'rejected_larger', afterTokens: input.tokens };
}

const FAILURE_NOTICE_RESOLUTIONS: ReadonlySet<HygieneResolution> = new Set([
  'aborted',
  'rejected_larger',
  'failed',
  'commit_failed',
]);

/** SPEC §11.3 steps 3, 5 and 6, without I/O. Never adopts a result that is not smaller than the input. */
export function hygieneOutcome(input: HygieneOutcomeInput): HygieneOutcome {
  const { resolution, afterTokens } = resolve(input);
  const adopt = resolution === 'adopted';
  const notices: string[] = [];
  if (FAILURE_NOTICE_RESOLUTIONS.has(resolution)) notices.push(NOTICE_HYGIENE_FAILED);
  if (afterTokens >= hygieneWarningThreshold(input.contextLength)) notices.push(NOTICE_HYGIENE_WARNING);
  return {
    adopt,
    resolution,
    messages: adopt && input.result.kind === 'compacted' ? input.result.messages : input.history,
    cooldownSeconds: adopt ? 0 : HYGIENE_FAILURE_COOLDOWN_S,
    restorePreviousSummary: resolution === 'rejected_larger' || resolution === 'commit_failed',
    afterTokens,
    notices,
  };
}
