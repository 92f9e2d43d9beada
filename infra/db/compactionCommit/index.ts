// The commit of a compaction result (SPEC §13.2 in place, §13.3 rotation; the row plan is engine/commit/plan.ts):
// one transaction per commit, retried as a whole (§13.6), idempotent by compaction id; the record and the
// `session:compress` event (§13.5) are written in the same transaction.
export {
  CompactionNotFoundError,
  CompactionNotReplayableError,
  SessionNotFoundError,
  TranscriptChangedError,
} from '../storeErrors.js';
export { type ReplayedSummary, type ReplayOutcome, replaceReplayedSummary } from '../summaryReplay.js';
export { commitCompaction } from './commit.js';
export { commitInPlace } from './inPlace.js';
export { commitRotation } from './rotation.js';
export { SESSION_COMPRESS_EVENT } from './shared.js';
export type { CommitInput, CommitOutcome, InPlaceCommit, RotationCommit } from './types.js';
