// The commit's input and outcome (SPEC §13.2 in place, §13.3 rotation).
import type { StoredStats } from '../../../contracts/compaction.js';
import type { CompactedTranscript } from '../../../engine/commit/plan.js';
import type { ChatMessage } from '../../../engine/types.js';
import type { LogTotals } from '../conversationHead.js';

/** What the reassemble phase hands to the commit. */
export interface CommitInput extends CompactedTranscript {
  compactionId: string;
  /** The active row ids, in position order, that the compaction read. */
  expectedRowIds: readonly number[];
  /**
   * The messages of those rows as the compaction read them, when it has them: the commit then reads only the rows'
   * state (ids, positions, runtime properties, pins), not their content again.
   */
  inputMessages?: readonly ChatMessage[];
  fallbackUsed: boolean;
  /** Stored as the record's stats; its `summary` (the summary text) is stored as the record's summary. */
  stats: StoredStats;
  /** The session's source; defaults to the stored one. */
  platform?: string;
  /**
   * The plugin or registered engine that produced `output` (SPEC §10.3), recorded in the commit's transaction (an
   * earlier attempt's fallback line is cleared); absent: the built-in phases (`compressor`).
   */
  engine?: string;
}

export interface InPlaceCommit extends CommitInput {
  sessionId: string;
}

export interface RotationCommit extends CommitInput {
  oldSessionId: string;
  newSessionId: string;
}

export interface CommitOutcome {
  compactionId: string;
  status: 'committed' | 'fallback';
  inPlace: boolean;
  /** The session that now holds the compacted transcript. */
  sessionId: string;
  /** '' in place (the `session:compress` event's value, SPEC §13.5); the previous session after a rotation. */
  oldSessionId: string;
  compressionCount: number;
  /** In place: the old rows archived by this commit. Rotation: the old rows not carried into the new session. */
  compactedRowIds: number[];
  insertedRowIds: number[];
  summaryRowId: number | null;
  /** True when the compaction had been committed before: nothing was written this time. */
  alreadyCommitted: boolean;
  /** Rows appended after the compaction read the transcript, kept after the output (in order). */
  keptSinceRowIds: number[];
  /** The conversation's totals after the commit (null: the session has no conversation record). */
  totals: LogTotals | null;
}
