// Provider errors → `LlmFailure` (SPEC §9.2, DESIGN.md §3): a plain error with a failure type and whether a retry may
// fix it; the activity guard (activities/guard.ts) hands it to Temporal as an ApplicationFailure, so this adapter
// does not depend on Temporal. Retries are Temporal's job (the SDK clients run with maxRetries 0): network errors, timeouts, HTTP 408,
// 429 and 5xx are retryable (429/5xx honour `retry-after-ms` / `retry-after` through `nextRetryDelay`); auth,
// permission, quota, 404, bad requests and "context too long" are not. Messages name the provider, model, status
// and error type only: a provider's error body never travels further (and never into a summary, SPEC §9.6).
import {
  APIUserAbortError as AnthropicAbortError,
  APIError as AnthropicAPIError,
  APIConnectionError as AnthropicConnectionError,
  APIConnectionTimeoutError as AnthropicTimeoutError,
} from '@anthropic-ai/sdk';
import {
  APIUserAbortError as OpenAIAbortError,
  APIError as OpenAIAPIError,
  APIConnectionError as OpenAIConnectionError,
  APIConnectionTimeoutError as OpenAITimeoutError,
} from 'openai';
import { LlmFailureType } from '../../contracts/failures.js';
import { ProviderKeyMissingError } from './providerKeys.js';

export { LlmFailureType } from '../../contracts/failures.js';

/** Where a call went; carried in the failure's details (no request or response bodies). */
export interface LlmCallSite {
  provider: string;
  model: string;
}

export interface LlmFailureDetails extends LlmCallSite {
  status: number | null;
  requestId: string | null;
}

/** The fields both SDKs' `APIError` share. */
interface SdkApiError {
  status: number | undefined;
  headers: Headers | undefined;
  error: unknown;
  requestID?: string | null | undefined;
}

const CONTEXT_TOO_LONG =
  /context[_ ]length|context window|context limit|maximum context|prompt is too long|prompt too long|too many (input )?tokens|input is too long|reduce the length|exceeds? the (model'?s? )?(maximum|max|context)|request too large|string too long/i;

function isSdkApiError(err: unknown): err is SdkApiError & Error {
  return err instanceof OpenAIAPIError || err instanceof AnthropicAPIError;
}

function isConnectionError(err: unknown): err is Error {
  return err instanceof OpenAIConnectionError || err instanceof AnthropicConnectionError;
}

function isTimeoutError(err: unknown): boolean {
  return err instanceof OpenAITimeoutError || err instanceof AnthropicTimeoutError;
}

function isAbortError(err: unknown): boolean {
  if (err instanceof OpenAIAbortError || err instanceof AnthropicAbortError) return true;
  return err instanceof Error && err.name === 'AbortError';
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** The `error` object of either wire shape: OpenAI `{error: {message, type, code}}` (the SDK passes the inner
 *  object) and Anthropic `{type: 'error', error: {type, message}}`. */
function errorObject(body: unknown): { type: string | null; code: string | null; message: string } {
  const outer = asRecord(body);
  const inner = asRecord(outer?.error) ?? outer;
  const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return {
    type: str(inner?.type),
    code: str(inner?.code),
    message: str(inner?.message) ?? '',
  };
}

/** Milliseconds from `retry-after-ms`, else `retry-after` (seconds or an HTTP date); null when absent or invalid. */
export function retryAfterMs(headers: Headers | undefined, now: () => number = Date.now): number | null {
  if (!headers) return null;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  if (Number.isFinite(date)) return Math.max(0, date - now());
  return null;
}

/** A failed provider call, classified: its type, whether a retry may fix it and when to retry (429/5xx). */
export class LlmFailure extends Error {
  readonly type: LlmFailureType;
  readonly nonRetryable: boolean;
  /** Milliseconds the provider asked to wait (`retry-after-ms` / `retry-after`); undefined when it did not. */
  readonly nextRetryDelay: number | undefined;
  readonly details: LlmFailureDetails;

  constructor(
    type: LlmFailureType,
    message: string,
    details: LlmFailureDetails,
    options: { nonRetryable: boolean; nextRetryDelayMs?: number | null },
  ) {
    super(message);
    this.name = 'LlmFailure';
    this.type = type;
    this.nonRetryable = options.nonRetryable;
    this.nextRetryDelay = options.nextRetryDelayMs ?? undefined;
    this.details = details;
  }
}

function failure(
  type: LlmFailureType,
  message: string,
  details: LlmFailureDetails,
  options: { nonRetryable: boolean; nextRetryDelayMs?: number | null },
): LlmFailure {
  return new LlmFailure(type, message, details, options);
}

function describeCall(site: LlmCallSite, what: string): string {
  return `${site.provider} (model ${site.model}): ${what}`;
}

function isContextTooLong(status: number, info: { type: string | null; code: string | null; message: string }) {
  if (status === 413) return true;
  if (status !== 400) return false;
  if (info.code === 'context_length_exceeded' || info.type === 'context_length_exceeded') return true;
  return CONTEXT_TOO_LONG.test(info.message);
}

/** OpenAI reports an exhausted balance as 429 `insufficient_quota`: that is a quota error, not a rate limit. */
function isQuotaExhausted(info: { type: string | null; code: string | null }): boolean {
  return info.code === 'insufficient_quota' || info.type === 'insufficient_quota';
}

function classifyStatus(err: SdkApiError, site: LlmCallSite, status: number): LlmFailure {
  const info = errorObject(err.error);
  const details: LlmFailureDetails = { ...site, status, requestId: err.requestID ?? null };
  const label = `HTTP ${status}${info.type ? ` ${info.type}` : ''}`;
  const permanent = (type: LlmFailureType, what: string) =>
    failure(type, describeCall(site, `${what} (${label})`), details, { nonRetryable: true });
  const transient = (type: LlmFailureType, what: string) =>
    failure(type, describeCall(site, `${what} (${label})`), details, {
      nonRetryable: false,
      nextRetryDelayMs: retryAfterMs(err.headers),
    });

  if (isContextTooLong(status, info))
    return permanent(LlmFailureType.ContextTooLong, 'request too large for the model');
  if (status === 429 && isQuotaExhausted(info)) return permanent(LlmFailureType.QuotaExceeded, 'quota exhausted');
  if (status === 429) return transient(LlmFailureType.RateLimited, 'rate limited');
  if (status === 408) return transient(LlmFailureType.Timeout, 'request timed out');
  if (status >= 500) return transient(LlmFailureType.Unavailable, 'server error');
  if (status === 401) return permanent(LlmFailureType.AuthError, 'authentication failed');
  if (status === 402) return permanent(LlmFailureType.QuotaExceeded, 'payment required');
  if (status === 403) return permanent(LlmFailureType.PermissionDenied, 'permission denied');
  if (status === 404) return permanent(LlmFailureType.NotFound, 'model or endpoint not found');
  return permanent(LlmFailureType.BadRequest, 'request rejected');
}

/**
 * Maps any error thrown by a provider call (SDK errors, a missing API key, our own code) to an LlmFailure. An
 * LlmFailure is returned unchanged.
 */
export function classifyProviderError(err: unknown, site: LlmCallSite): LlmFailure {
  if (err instanceof LlmFailure) return err;
  const details: LlmFailureDetails = { ...site, status: null, requestId: null };
  if (err instanceof ProviderKeyMissingError) {
    return failure(LlmFailureType.ConfigError, err.message, details, { nonRetryable: true });
  }
  if (isSdkApiError(err) && typeof err.status === 'number') return classifyStatus(err, site, err.status);
  if (isAbortError(err)) {
    return failure(LlmFailureType.Aborted, describeCall(site, 'request aborted'), details, { nonRetryable: false });
  }
  if (isTimeoutError(err)) {
    return failure(LlmFailureType.Timeout, describeCall(site, 'request timed out'), details, { nonRetryable: false });
  }
  if (isConnectionError(err)) {
    return failure(LlmFailureType.Connection, describeCall(site, 'connection error'), details, { nonRetryable: false });
  }
  const name = err instanceof Error ? err.name : typeof err;
  return failure(LlmFailureType.Unknown, describeCall(site, `unexpected error (${name})`), details, {
    nonRetryable: false,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Reply-level failures of the summarizer (SPEC §9.1, §9.2): never retried, never returned as a summary.

export function emptySummaryFailure(site: LlmCallSite): LlmFailure {
  return failure(LlmFailureType.EmptySummary, describeCall(site, 'summary reply was empty'), nullStatus(site), {
    nonRetryable: true,
  });
}

export function summaryRefusedFailure(site: LlmCallSite): LlmFailure {
  return failure(
    LlmFailureType.SummaryRefused,
    describeCall(site, 'the model refused to write the summary'),
    nullStatus(site),
    {
      nonRetryable: true,
    },
  );
}

export function summaryTruncatedFailure(site: LlmCallSite, finishReason: string): LlmFailure {
  return failure(
    LlmFailureType.SummaryTruncated,
    describeCall(site, `summary reply was truncated (${finishReason})`),
    nullStatus(site),
    { nonRetryable: true },
  );
}

export function modelNotAvailableFailure(site: LlmCallSite, message: string): LlmFailure {
  return failure(LlmFailureType.ModelNotAvailable, message, nullStatus(site), { nonRetryable: true });
}

/** A 200 response without choices (OpenRouter reports some upstream errors this way): transient. */
export function noChoiceFailure(site: LlmCallSite): LlmFailure {
  return failure(LlmFailureType.Unavailable, describeCall(site, 'response had no choices'), nullStatus(site), {
    nonRetryable: false,
  });
}

function nullStatus(site: LlmCallSite): LlmFailureDetails {
  return { ...site, status: null, requestId: null };
}

/** True for a failure that a retry could fix (SPEC §9.2). */
export function isTransientFailure(err: unknown): boolean {
  return err instanceof LlmFailure && !err.nonRetryable;
}
