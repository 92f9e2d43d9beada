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

/** The conversation does not exist for this tenant (row-level security hides other tenants' conversations too). */
export class ConversationNotFoundError extends Error {
  override readonly name = 'ConversationNotFoundError';
  constructor(readonly conversationId: string) {
    super(`Conversation ${conversationId} not found`);
  }
}

/**
 * An idempotency key the conversation already holds arrived with a different message (issue #9 §7): the batch is
 * refused as a whole, nothing is written. The same key with the same message is a harmless duplicate instead.
 */
export class IdempotencyConflictError extends Error {
  override readonly name = 'IdempotencyConflictError';
  constructor(
    readonly idempotencyKey: string,
    /** Index of the item in the batch. */
    readonly index: number,
  ) {
    super(
      `messages[${index}].idempotencyKey '${idempotencyKey}' was already used for a different message in this ` +
        'conversation; send a new key for a new message',
    );
  }
}
