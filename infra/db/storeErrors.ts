// Errors the session store raises on purpose, so activities can tell them apart by `name` (and make them
// non-retryable): a retry cannot fix a missing row or a transcript that moved on.

/** The session's active rows are not the ones the compaction read (SPEC §13.2): nothing was written. */
export class TranscriptChangedError extends Error {
  override readonly name = 'TranscriptChangedError';
  constructor(
    readonly sessionId: string,
    readonly expectedRowIds: readonly number[],
    readonly actualRowIds: readonly number[],
  ) {
    super(
      `Transcript of session ${sessionId} changed since the compaction read it ` +
        `(expected ${expectedRowIds.length} active rows, found ${actualRowIds.length})`,
    );
  }
}

/** The session does not exist for this tenant (row-level security hides other tenants' sessions too). */
export class SessionNotFoundError extends Error {
  override readonly name = 'SessionNotFoundError';
  constructor(readonly sessionId: string) {
    super(`Session ${sessionId} not found`);
  }
}

/** The compaction record does not exist for this tenant, or belongs to another session. */
export class CompactionNotFoundError extends Error {
  override readonly name = 'CompactionNotFoundError';
  constructor(
    readonly compactionId: string,
    detail = 'not found',
  ) {
    super(`Compaction ${compactionId} ${detail}`);
  }
}

/** A replay was asked for a compaction that is not replayable (SPEC §13.7). */
export class CompactionNotReplayableError extends Error {
  override readonly name = 'CompactionNotReplayableError';
  constructor(
    readonly compactionId: string,
    detail: string,
  ) {
    super(`Compaction ${compactionId} cannot be replayed: ${detail}`);
  }
}
