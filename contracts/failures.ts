// The failure type names (ApplicationFailure.type) the activities raise and the workflows and the gateway read,
// defined once: the host's own (FailureType) and a provider call's (LlmFailureType, classified by infra/llm/errors.ts).
export const FailureType = {
  /** A record the activity needs does not exist (for this tenant). */
  NotFound: 'NotFound',
  UnknownTenant: 'UnknownTenant',
  UnknownSession: 'UnknownSession',
  UnknownConversation: 'UnknownConversation',
  /** The compaction window has nothing to summarise (SPEC §8.5.1). */
  NoWindow: 'NoWindow',
  /** The summarizer's reply was empty after normalisation (SPEC §8.5.6: class `empty`). */
  EmptySummary: 'EmptySummary',
  /** Only a compaction that used the fallback summary can be replayed (SPEC §13.7). */
  NotReplayable: 'NotReplayable',
  NoSummarizer: 'NoSummarizer',
  /** The rows a compaction read are no longer the first active rows of its session (SPEC §13.2). */
  TranscriptChanged: 'TranscriptChanged',
  InvalidModel: 'InvalidModel',
  NoProvider: 'NoProvider',
  ProviderKeyMissing: 'ProviderKeyMissing',
  /** PostgreSQL refused the data with an error no retry can fix (data exception, constraint, limit). */
  StoreRefused: 'StoreRefused',
  /** A Codex app-server turn or compaction failed, or the app-server refused the request (SPEC §15.2). */
  AppServerTurnFailed: 'AppServerTurnFailed',
  /** An idempotency key was reused for a different message. */
  IdempotencyConflict: 'IdempotencyConflict',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** Failure types of a provider call (SPEC §9.2). `EmptySummary` is the one the compaction workflow maps to class `empty`. */
export const LlmFailureType = {
  RateLimited: 'ProviderRateLimited',
  Unavailable: 'ProviderUnavailable',
  Timeout: 'ProviderTimeout',
  Connection: 'ProviderConnectionError',
  Aborted: 'ProviderRequestAborted',
  AuthError: 'ProviderAuthError',
  PermissionDenied: 'ProviderPermissionDenied',
  QuotaExceeded: 'ProviderQuotaExceeded',
  NotFound: 'ProviderNotFound',
  BadRequest: 'ProviderBadRequest',
  ContextTooLong: 'ContextTooLong',
  ConfigError: 'ProviderConfigError',
  ModelNotAvailable: 'ModelNotAvailable',
  Unknown: 'ProviderError',
  EmptySummary: FailureType.EmptySummary,
  SummaryRefused: 'SummaryRefused',
  SummaryTruncated: 'SummaryTruncated',
} as const;
export type LlmFailureType = (typeof LlmFailureType)[keyof typeof LlmFailureType];
