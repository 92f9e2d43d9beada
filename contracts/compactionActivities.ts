// The compaction's activities and the replay workflow: their inputs and results (ids and decisions, never message
// content, DESIGN.md §3), and the replayability rule the gateway and the replay activities share (SPEC §13.7).
import type { CompressionStats, SummaryFailureClass } from '../engine/index.js';
import {
  type CommittedTotals,
  type CompactionTimeouts,
  REPLAYABLE_STATUSES,
  type StoredCompactionTrigger,
  type SummaryRetention,
} from './compaction.js';

/**
 * Stats as they travel through Temporal: without the summary text (SPEC §8.8 `summary`), which stays in the
 * compactions row (claim check, DESIGN.md §3); the gateway reads it from there for its answers.
 */
export function contentFreeStats(stats: CompressionStats): CompressionStats {
  return { ...stats, summary: null };
}

export interface CompactionRef {
  tenantId: string;
  compactionId: string;
}

export interface BeginCompactionInput extends CompactionRef {
  sessionId: string;
  conversationId: string;
  seq: number;
  trigger: StoredCompactionTrigger;
  inPlace: boolean;
  focusTopic: string | null;
  /**
   * Only in histories recorded before the claim check; new compactions leave it out and the record takes the
   * previous summary from the log (SPEC §13.4), so no summary travels through Temporal (DESIGN.md §3).
   */
  previousSummary?: string | null;
}

export interface AlignInput extends CompactionRef {
  protectFirstN: number;
  protectLastN: number;
  minTailUserMessages: number;
  tailTokenBudget: number;
  contextLength: number;
  /** Compact only the history before this row (hygiene: the incoming message and what follows stay out). */
  beforeRowId?: number | null;
  /** Create the compaction record first (patch `align-begins`); absent in older histories (beginCompaction ran). */
  begin?: Omit<BeginCompactionInput, keyof CompactionRef>;
  /**
   * Resolve the tenant's `context.engine` first (SPEC §10.3) and return an engine other than the built-in one instead
   * of a plan. Only workflow code that can run that engine asks (absent in older workflow code, so a rolling deploy
   * never hands it a result without a plan).
   */
  chooseEngine?: boolean;
  /**
   * The configured engine could not compress (SPEC §10.3): the built-in phases run whatever is configured, and this
   * line is recorded as the reason.
   */
  engineFallback?: string;
}

export interface AlignResult {
  noop: false | string;
  headEnd: number;
  cut: number;
  inputRows: number;
  tokensBefore: number;
  /**
   * SPEC §10.3: the tenant's `context.engine` names a plugin or registered engine that loads; its `compress()` does
   * the compaction (engineCompress) and no plan was made. Absent: the built-in phases go on (also in histories
   * recorded before issue #14 §1).
   */
  engine?: string;
  /** The §10.3 line when another engine was configured but the built-in compressor does the work. */
  engineWarning?: string | null;
}

/** One compaction by the tenant's configured engine (SPEC §10.3), committed in one activity. */
export interface EngineCompressInput extends CompactionRef {
  engine: string;
  /** As ReassembleInput: SPEC §19 minimum gain (hygiene ≥ 1, §11.3); null: none (manual). */
  requiredGain: number | null;
  newSessionId: string | null;
  platform: string;
  contextLength: number;
  /** Hygiene (SPEC §11.3): compress only the history before this row. */
  beforeRowId: number | null;
  /** A manual compaction (`force` for the engine). */
  force: boolean;
}

/**
 * What the engine did. `fallback`: it could not compress (failed to load here, threw, or returned a transcript the
 * host refuses); nothing was written and the built-in phases take over with this line. Otherwise the outcome.
 */
export type EngineCompressResult =
  | { fallback: string }
  | {
      fallback: null;
      status: 'committed' | 'rejected' | 'noop';
      sessionId: string;
      stats: CompressionStats;
      totals: CommittedTotals | null;
      summarizerCalled: boolean;
    };

export type SummarizeResult =
  | { ok: true; summarizerCalled: boolean }
  | { ok: false; failureClass: SummaryFailureClass; summarizerCalled: boolean; reason: string };

export interface ReassembleInput extends CompactionRef {
  /** Set when the summary failed: build the fallback summary of SPEC §9.5 with this class. */
  fallbackFailureClass: SummaryFailureClass | null;
  /** Estimated tokens the result must save to be committed (SPEC §19 min_gain_tokens; hygiene ≥ 1, §11.3); null: none. */
  requiredGain: number | null;
  /** Rotation target (SPEC §13.3), generated in the workflow; null for in-place. */
  newSessionId: string | null;
  platform: string;
}

export interface ReassembleResult {
  status: 'committed' | 'fallback' | 'rejected';
  sessionId: string;
  stats: CompressionStats;
  /** The quality gate's retention shares (LLM summaries only), from the record. */
  retention?: SummaryRetention | null;
  /** The conversation's totals after the commit (null when nothing was committed, or without a record). */
  totals: CommittedTotals | null;
  /** SPEC §19 fixed point: similarity of the new summary body to the previous one (null without one). */
  similarity: number | null;
}

export interface CompactionEnd extends CompactionRef {
  status: 'aborted' | 'failed';
  error: string | null;
  failureClass: SummaryFailureClass | null;
}

/** Why a compaction with this status cannot be replayed, or null when it can (SPEC §13.7). */
export function notReplayableReason(record: { id: string; status: string; conversation_id: string }): string | null {
  if ((REPLAYABLE_STATUSES as readonly string[]).includes(record.status)) return null;
  if (record.status === 'aborted' || record.status === 'failed' || record.status === 'rejected') {
    return (
      `compaction ${record.id} ended '${record.status}': nothing was committed, so there is no summary to replace. ` +
      `To compact the live transcript now, POST /v1/conversations/${record.conversation_id}/compact.`
    );
  }
  return `compaction ${record.id} has status '${record.status}'; only compactions that used the fallback summary can be replayed`;
}

export interface ReplayTarget {
  conversationId: string;
  sessionId: string;
  status: string;
}

export interface ApplyReplayResult {
  applied: boolean;
  reason: string | null;
  conversationId: string;
}

/** The replay workflow's input (SPEC §13.7). */
export interface ReplayInput {
  tenantId: string;
  compactionId: string;
  timeouts?: Partial<CompactionTimeouts>;
}

export interface ReplayResult {
  compactionId: string;
  status: 'replaced' | 'recorded' | 'failed';
  reason: string | null;
  /** The replayed summary: null in the workflow's result (claim check); the gateway reads it from the store. */
  summaryBody: string | null;
  error: string | null;
}
