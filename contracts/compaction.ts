// The compaction protocol (DESIGN.md §3): its triggers and statuses, the child workflow's input and outcome, and the
// JSON shapes stored in the `compactions` row by the phase activities and the commit. Pure, defined once.
import type { CompressionStats, SummaryFailureClass } from '../engine/index.js';
import type { ReplayOrigin } from '../engine/nativeCompaction.js';

/**
 * SPEC §13.1 / §16.4 compaction triggers, `client`: a drop-in client's own compaction, recorded when the gateway
 * passed its summary request through (issue #12; the spec is silent on clients that compact themselves), and
 * `responses_native`: a checkpoint the OpenAI Responses server made (SPEC §15.1; recorded, no rows change, for its
 * cache economics — the spec names no trigger for it).
 */
export const COMPACTION_TRIGGERS = [
  'preflight',
  'post_response',
  'manual',
  'hygiene',
  'codex_app_server',
  'client',
  'responses_native',
] as const;
export type StoredCompactionTrigger = (typeof COMPACTION_TRIGGERS)[number];
/** Triggers recorded for compactions someone else ran (an app-server session, SPEC §15.2; a drop-in client; the
 * Responses server, SPEC §15.1). */
export const RECORDED_TRIGGERS = [
  'codex_app_server',
  'client',
  'responses_native',
] as const satisfies readonly StoredCompactionTrigger[];
/** The triggers this host starts. */
export type CompactionTrigger = Exclude<StoredCompactionTrigger, (typeof RECORDED_TRIGGERS)[number]>;

/** How a compaction ended (`pending`/`running` while it runs; `rejected`: saved too little, SPEC §11.3 / §19). */
export const COMPACTION_STATUSES = [
  'pending',
  'running',
  'committed',
  'fallback',
  'noop',
  'aborted',
  'rejected',
  'failed',
] as const;
export type StoredCompactionStatus = (typeof COMPACTION_STATUSES)[number];
export type CompactionStatus = Exclude<StoredCompactionStatus, 'pending' | 'running'>;
/** Statuses of a committed compaction (the transcript holds its result). */
export const COMMITTED_STATUSES = ['committed', 'fallback'] as const satisfies readonly CompactionStatus[];
/** Only a compaction that used the fallback summary can be replayed (SPEC §13.7). */
export const REPLAYABLE_STATUSES = ['fallback'] as const satisfies readonly CompactionStatus[];

/**
 * Who wrote a committed summary: the configured LLM summariser, the extractive one (SPEC §19), §9.5's fallback, or
 * Anthropic's compaction request (SPEC §19 `summary_backend: anthropic_native`, issue #13 §3).
 */
export const COMPACTION_SUMMARY_BACKENDS = ['llm', 'extractive', 'fallback', 'anthropic_native'] as const;
export type CompactionSummaryBackend = (typeof COMPACTION_SUMMARY_BACKENDS)[number];

/**
 * A signed `compaction` block as Anthropic returned it (beta `compact-2026-09-04`): sent back verbatim, first in
 * `messages`, in place of the messages it summarises. `content` is its readable summary.
 */
export interface AnthropicCompactionBlock {
  type: 'compaction';
  content: string;
  encrypted_content: string | null;
  signature?: string | null;
  tool_changes?: unknown[] | null;
}

/**
 * `compactions.native_summary` (migrations/0018): the block an `anthropic_native` compaction's summary came from and
 * its origin. The summary row holds its readable text (searchable); requests to the same origin send the block.
 */
export interface NativeSummary {
  block: AnthropicCompactionBlock;
  /** It goes back only to the provider, base URL and account that issued it (as SPEC §15.1 replay items do). */
  origin: ReplayOrigin;
}

/** Why an `anthropic_native` compaction used the local summariser instead (`compactions.native_fallback`). */
export const NATIVE_FALLBACK_REASONS = [
  /** The summary route is not Anthropic's Messages API with a Claude model. */
  'unsupported_route',
  /** The beta was refused earlier in this session (stored on the session). */
  'disabled_for_session',
  /** The beta was refused now (the session stops trying). */
  'beta_refused',
  /** The conversation up to the cut ends with a tool call whose result is not stored yet (the API cannot compact it). */
  'open_tool_call',
  /** The provider refused this compaction request (4xx naming it, or 529 compaction_unavailable). */
  'request_refused',
  /** The answer carried no block with content (another stop reason, or a failed compaction). */
  'no_block',
] as const;
export type NativeFallbackReason = (typeof NATIVE_FALLBACK_REASONS)[number];

/** What a provider-side summary cost (`compactions.summary_usage`): from `usage.iterations`' compaction entries. */
export interface SummaryUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

export interface CompactionTimeouts {
  /** Per-phase start-to-close for begin, align, prune and reassemble (seconds). */
  phaseSeconds: number;
  /** SPEC §9.2: one summarizer attempt (auxiliary.compression.timeout or summary_timeout_seconds). */
  summaryAttemptSeconds: number;
  /** SPEC §9.2: all summarizer attempts together (compaction_ceiling_seconds). */
  summaryCeilingSeconds: number;
  /** Heartbeat timeout of every compaction activity (seconds). */
  summaryHeartbeatSeconds: number;
}

/** The compaction child workflow's input: ids, the limits of the boundaries and what the engine decided. */
export interface CompactionInput {
  tenantId: string;
  conversationId: string;
  sessionId: string;
  compactionId: string;
  seq: number;
  trigger: CompactionTrigger;
  inPlace: boolean;
  newSessionId: string | null;
  focusTopic: string | null;
  /** Only in histories recorded before the claim check (BeginCompactionInput): new compactions leave it out. */
  previousSummary?: string | null;
  /** False while the summary cooldown is active and the compaction is not forced (SPEC §9.3: class cooldown). */
  summaryAllowed: boolean;
  abortOnSummaryFailure: boolean;
  /**
   * Estimated tokens the reassembled transcript must save to be committed (SPEC §19 min_gain_tokens; at least 1 for
   * hygiene, SPEC §11.3 step 3); null: none (manual). A compaction saving less is recorded as `rejected`.
   */
  requiredGain: number | null;
  /** Hygiene (SPEC §11.3): compact the history before this row (the incoming message); null: the whole transcript. */
  beforeRowId: number | null;
  platform: string;
  limits: { protectFirstN: number; protectLastN: number; minTailUserMessages: number; tailTokenBudget: number };
  contextLength: number;
  timeouts: CompactionTimeouts;
}

/** The conversation's live totals at a version (after a commit). */
export interface CommittedTotals {
  version: number;
  activeMessages: number;
  activeTokens: number;
}

/** What the compaction child workflow reports to the conversation. */
export interface CompactionOutcome {
  compactionId: string;
  status: CompactionStatus;
  noopReason: string | null;
  sessionId: string;
  fallbackUsed: boolean;
  summarizerCalled: boolean;
  failureClass: SummaryFailureClass | null;
  stats: CompressionStats | null;
  /** The conversation's totals right after the commit (null when nothing was committed). */
  totals: CommittedTotals | null;
  /** Similarity of the new summary body to the previous one (SPEC §19 fixed point), null without a previous one. */
  similarity: number | null;
  /** The quality gate's retention shares of an LLM summary (issue #15 §3); null otherwise. */
  retention?: SummaryRetention | null;
  /** SPEC §10.3: another engine was configured but the built-in compressor did the work (the line, also a notice). */
  engineWarning?: string | null;
  error: string | null;
}

/** Share of the window's pinned identifiers and constraints a summary kept, before and after the quality gate. */
export interface SummaryRetention {
  before: number;
  after: number;
}

/** The outcome of a compaction that committed nothing (yet): `failed`, the transcript untouched. */
export function failedCompaction(compactionId: string, sessionId: string, error: string | null): CompactionOutcome {
  return {
    compactionId,
    status: 'failed',
    noopReason: null,
    sessionId,
    fallbackUsed: false,
    summarizerCalled: false,
    failureClass: null,
    stats: null,
    totals: null,
    similarity: null,
    error,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Stored in the `compactions` row.

/** `compactions.plan`, stored by the align phase. */
export interface StoredPlan {
  headEnd: number;
  cut: number;
  reinsertIndex: number | null;
  noop: false | string;
  /** The active rows the compaction read, in position order: the input of every later phase. */
  inputRowIds: number[];
  tokensBefore: number;
  contextLength: number;
}

/** `compactions.prune_result`, stored by the prune phase: only the rows whose content changed. */
export interface StoredPrune {
  prunedCount: number;
  replacements: Array<[index: number, content: string]>;
}

/** What a commit adds to `compactions.stats` (key `commit`), so a repeated commit returns the same outcome. */
export interface CommitNote {
  /** The row that holds the summary now (a replay moves it to the new row). */
  summaryRowId: number | null;
  insertedRowIds: number[];
  /** The session's compression_count right after the commit (the event's value). */
  compressionCount: number;
  /** Rows appended after the compaction read the transcript, kept after the output. */
  keptSinceRowIds?: number[];
}

export type ReplayNotAppliedReason = 'not_latest' | 'summary_row_inactive';

/** What a replay adds to `compactions.stats` (key `replay`), also when it could not touch the transcript. */
export interface ReplayNote {
  applied: boolean;
  reason?: ReplayNotAppliedReason;
  summary: string;
  summaryBody: string;
  previousSummaryRowId?: number;
  summaryRowId?: number;
}

/** `compactions.stats`: the CompressionStats of SPEC §8.8 and the store's bookkeeping. */
export type StoredStats = CompressionStats & {
  /** Active rows of the output (reported again by a retried commit). */
  activeMessages?: number;
  commit?: CommitNote;
  replay?: ReplayNote;
};
