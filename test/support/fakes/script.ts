// Provider-neutral scripts for the fake LLM servers (DESIGN.md §5): each fake turns a step into its own real wire
// format (OpenAI chat completions or Anthropic Messages, including each API's error JSON).

export interface FakeToolCall {
  id: string;
  name: string;
  /** The call's input; the OpenAI fake sends it as a JSON string, the Anthropic fake as an object. */
  input: Record<string, unknown>;
}

export interface ReplyStep {
  kind: 'reply';
  /** Assistant text; null or '' for none. */
  text: string | null;
  toolCalls?: FakeToolCall[];
  /** Neutral stop reason; each fake maps it (`truncated` → `length` / `max_tokens`, ...). */
  stop?: 'stop' | 'tool_calls' | 'truncated' | 'refusal' | 'content_filter';
  /** OpenAI `message.refusal` text (the Anthropic fake uses stop_reason `refusal`). */
  refusal?: string;
  /** Usage object sent verbatim, in the fake's own wire format; each fake has a default. */
  usage?: Record<string, unknown>;
  /** Answer only after this long (a slow model). */
  delayMs?: number;
  /** Streamed: wait this long between the answer's events (a model that writes as it thinks). */
  eventGapMs?: number;
  /** Streamed: cut the connection after this many events (a stream that breaks off). */
  cutAfterEvents?: number;
  /** OpenAI Responses: the encrypted content of a `compaction` output item sent before the reply (SPEC §15.1). */
  compaction?: string;
  /**
   * Anthropic: answer a compaction request (beta `compact-2026-09-04`) with a lone signed `compaction` block of this
   * content (null: a failed compaction) and stop_reason `compaction`; `text` is ignored.
   */
  compactionBlock?: { content: string | null; encrypted?: string };
}

export interface ErrorStep {
  kind: 'error';
  status: number;
  /** Provider error type (e.g. `rate_limit_error`); each fake picks its default for the status. */
  type?: string;
  /** OpenAI error `code` (e.g. `context_length_exceeded`); Anthropic `error.details.error_code` (`compaction_unavailable`). */
  code?: string;
  /** OpenAI error `param` (e.g. `context_management`). */
  param?: string;
  message?: string;
  headers?: Record<string, string>;
}

/** Accept the request and never answer (until `ms` passes or the server closes). */
export interface HangStep {
  kind: 'hang';
  ms?: number;
}

/** Any status and body, sent as given (for shapes the other steps do not cover). */
export interface RawStep {
  kind: 'raw';
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** HTTP 400 with the provider's own "prompt too long" error (OpenAI `context_length_exceeded`, Anthropic
 *  `invalid_request_error` "prompt is too long"). */
export interface ContextTooLongStep {
  kind: 'context_too_long';
}

export type FakeStep = ReplyStep | ErrorStep | HangStep | RawStep | ContextTooLongStep;

/** What a reply step asks of the wire response (fakeServer.ts) besides its body. */
export function pacing(step: ReplyStep): Pick<ReplyStep, 'delayMs' | 'eventGapMs' | 'cutAfterEvents'> {
  const { delayMs, eventGapMs, cutAfterEvents } = step;
  return {
    ...(delayMs ? { delayMs } : {}),
    ...(eventGapMs ? { eventGapMs } : {}),
    ...(cutAfterEvents !== undefined ? { cutAfterEvents } : {}),
  };
}

export function reply(text: string, options: Partial<Omit<ReplyStep, 'kind' | 'text'>> = {}): ReplyStep {
  return { kind: 'reply', text, ...options };
}

export function toolCallsReply(toolCalls: FakeToolCall[], text: string | null = null): ReplyStep {
  return { kind: 'reply', text, toolCalls, stop: 'tool_calls' };
}

/** Anthropic's answer to a compaction request: a lone signed `compaction` block (the fake signs it). */
export function compactionBlockReply(
  content: string | null,
  options: Partial<Omit<ReplyStep, 'kind' | 'text' | 'compactionBlock'>> & { encrypted?: string } = {},
): ReplyStep {
  const { encrypted, ...rest } = options;
  return { kind: 'reply', text: null, compactionBlock: { content, encrypted: encrypted ?? 'opaque-state' }, ...rest };
}

export function emptyReply(): ReplyStep {
  return { kind: 'reply', text: '' };
}

export function refusalReply(): ReplyStep {
  return { kind: 'reply', text: null, stop: 'refusal', refusal: "I'm sorry, I can't help with that." };
}

export function truncatedReply(text = '## Goal\nThe user wants'): ReplyStep {
  return { kind: 'reply', text, stop: 'truncated' };
}

export function rateLimited(headers: Record<string, string> = { 'retry-after': '7' }): ErrorStep {
  return { kind: 'error', status: 429, message: 'Rate limit reached; please retry later.', headers };
}

export function serverError(status = 500): ErrorStep {
  return { kind: 'error', status, message: 'The server had an error while processing your request.' };
}

export function unauthorized(): ErrorStep {
  return { kind: 'error', status: 401, message: 'Incorrect API key provided.' };
}

export function httpError(status: number, message = `error ${status}`, extra: Partial<ErrorStep> = {}): ErrorStep {
  return { kind: 'error', status, message, ...extra };
}

export function contextTooLong(): ContextTooLongStep {
  return { kind: 'context_too_long' };
}

export function hang(ms?: number): HangStep {
  return ms === undefined ? { kind: 'hang' } : { kind: 'hang', ms };
}
