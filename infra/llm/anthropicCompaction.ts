// Anthropic compaction blocks (beta `compact-2026-09-04`; issue #13 §3, SPEC §19 `summary_backend: anthropic_native`):
// the compaction request that summarises a conversation into one signed `compaction` block, and how a later request
// carries such a block — first in `messages`, in place of the messages it summarises, verbatim (its signature covers
// its content) — only to the provider, base URL and account that issued it.
//
// The compaction request is the conversation up to the compaction's cut as Messages API content, `compaction:
// {type: 'summarize', instructions}` with our §8.5.5 template as the instructions, and never `context_management`
// (the API refuses the two together). Its answer is a block (stop_reason `compaction`), or the local summariser takes
// over: a refused beta, a request the provider refuses (a documented `compaction_*` error, 529
// `compaction_unavailable`, any other 4xx that names the request), an answer without a block with content. Other
// failures (auth, rate limits, 5xx, timeouts) leave as LlmFailures, as a local summary's would. Its cost is read from
// `usage.iterations` (the compaction entries; their tokens are not in the top-level usage).

import type Anthropic from '@anthropic-ai/sdk';
import { APIError } from '@anthropic-ai/sdk';
import type { AnthropicCompactionBlock, SummaryUsage } from '../../contracts/compaction.js';
import { resolveModelAlias } from '../../engine/modelRegistry.js';
import type { ReplayOrigin } from '../../engine/nativeCompaction.js';
import type { ChatMessage } from '../../engine/types.js';
import {
  type AnthropicRequestMessages,
  type AnthropicRequestOptions,
  toAnthropicRequest,
} from './anthropicMessages.js';
import { type AnthropicProviderClient, createProviderClient } from './clients.js';
import { classifyProviderError, type LlmCallSite } from './errors.js';
import type { ProviderConfig } from './providers.js';
import type { SummarizerPlan } from './summarizer.js';

export const COMPACT_BETA = 'compact-2026-09-04';

/** A block a request starts with, and the host's own text sent right after it in the same assistant message. */
export interface LeadingCompaction {
  block: AnthropicCompactionBlock;
  /** What the committed summary adds to the block's content (quality-gate items, the archive pointer); '' for none. */
  after: string;
}

/** SPEC §19: the route can summarise into a block — Anthropic's own Messages API (an `anthropic`-kind provider), Claude. */
export function anthropicNativeRoute(provider: Pick<ProviderConfig, 'kind'>, model: string): boolean {
  return provider.kind === 'anthropic' && /claude/i.test(model);
}

/** The client's route, as a block's origin is compared with it. */
export function originOf(client: Pick<AnthropicProviderClient, 'id' | 'baseUrl' | 'account'>): ReplayOrigin {
  return { provider: client.id, baseUrl: client.baseUrl, account: client.account };
}

/** The block as a request param: exactly the fields it came with. */
function blockParam(block: AnthropicCompactionBlock): Record<string, unknown> {
  const param: Record<string, unknown> = {
    type: 'compaction',
    content: block.content,
    encrypted_content: block.encrypted_content,
  };
  if (block.signature !== undefined) param.signature = block.signature;
  if (block.tool_changes !== undefined) param.tool_changes = block.tool_changes;
  return param;
}

/**
 * The request's `system` and `messages` with the block first: one assistant message holding the block, the host's
 * text after it, and — when the transcript after the block starts with an assistant turn — that turn's blocks, so that
 * no two assistant messages follow each other.
 */
export function toAnthropicRequestWithBlock(
  messages: readonly ChatMessage[],
  leading: LeadingCompaction,
  options: AnthropicRequestOptions = {},
): AnthropicRequestMessages {
  const request = toAnthropicRequest(messages, options);
  const content: unknown[] = [blockParam(leading.block)];
  if (leading.after !== '') content.push({ type: 'text', text: leading.after });
  const [first, ...rest] = request.messages;
  let tail = request.messages;
  if (first?.role === 'assistant') {
    content.push(...(typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content));
    tail = rest;
  }
  const lead = { role: 'assistant', content } as unknown as Anthropic.MessageParam;
  return { ...request, messages: [lead, ...tail.filter((m) => !isEmptyText(m))] };
}

function isEmptyText(message: Anthropic.MessageParam): boolean {
  return message.content === '' || (Array.isArray(message.content) && message.content.length === 0);
}

/** Where a transcript holds a block's summary: the row and the summary text it starts with. */
export interface NativeSummaryAt {
  /** The row that holds the summary (standalone, or merged with the row's own content). */
  rowId: number;
  /** The summary text the row starts with (SUMMARY_PREFIX, newline, committed body). */
  summaryText: string;
}

/** A row's message without the summary it starts with: its own content, or null when it has none. */
function ownPart(message: ChatMessage, summaryText: string): ChatMessage | null {
  const { content } = message;
  if (typeof content === 'string') {
    const own = content.startsWith(summaryText) ? content.slice(summaryText.length).replace(/^\n\n/, '') : content;
    return own === '' ? null : { ...message, content: own };
  }
  if (Array.isArray(content)) {
    const [first, ...parts] = content;
    const carriesSummary = first?.type === 'text' && first.text.startsWith(summaryText);
    const own = carriesSummary ? parts : content;
    return own.length === 0 ? null : { ...message, content: own };
  }
  return null;
}

/**
 * The rows a request sends after the block: system rows, the own part of the summary row (when merged), every row
 * after it. The rows before it — the head the block's request carried — are left out: the block stands in for them.
 * Null when the summary row is not among `rows` (a later compaction archived it).
 */
export function rowsAfterNativeSummary<R extends { id: number; message: ChatMessage }>(
  rows: readonly R[],
  at: NativeSummaryAt,
): R[] | null {
  const index = rows.findIndex((row) => row.id === at.rowId);
  if (index < 0) return null;
  const summaryRow = rows[index] as R;
  const own = ownPart(summaryRow.message, at.summaryText);
  return [
    ...rows.slice(0, index).filter((row) => row.message.role === 'system'),
    ...(own ? [{ ...summaryRow, message: own }] : []),
    ...rows.slice(index + 1),
  ];
}

/** What the committed summary adds after the block's content: the remainder of the body, or '' when it differs. */
export function textAfterBlock(committedBody: string, block: AnthropicCompactionBlock): string {
  const content = block.content.trimEnd();
  return committedBody.startsWith(content) ? committedBody.slice(content.length).trim() : '';
}

// ---------------------------------------------------------------------------------------------------------------
// The compaction request.

export interface CompactionRequestInput {
  model: string;
  /** The conversation up to the cut (after the previous native summary, when the request starts with its block). */
  messages: readonly ChatMessage[];
  /** The previous compaction's block when the conversation starts from it (same origin only). */
  leading: LeadingCompaction | null;
  instructions: string;
  maxTokens: number;
  signal?: AbortSignal;
}

/**
 * The documented limit of a compaction request: it cannot end on an unfinished assistant turn — a tool call whose
 * result is not stored yet. (A window's cut never splits a tool group, SPEC §8.3.3, and sanitising answers earlier
 * orphan calls, §8.7; this is the last check before the request.)
 */
export function endsOnOpenToolCall(messages: readonly ChatMessage[]): boolean {
  const last = messages.at(-1);
  return last?.role === 'assistant' && (last.tool_calls?.length ?? 0) > 0;
}

export type CompactionOutcome =
  | { kind: 'block'; block: AnthropicCompactionBlock; usage: SummaryUsage }
  | { kind: 'fallback'; reason: 'beta_refused' | 'request_refused' | 'no_block'; detail: string };

/** The compaction request's body (exported for tests of its shape). */
export function compactionRequestBody(input: CompactionRequestInput): Anthropic.Beta.MessageCreateParamsNonStreaming {
  const { system, messages } = input.leading
    ? toAnthropicRequestWithBlock(input.messages, input.leading)
    : toAnthropicRequest(input.messages);
  return {
    model: resolveModelAlias(input.model).sendAs,
    max_tokens: input.maxTokens,
    ...(system !== undefined ? { system } : {}),
    messages: messages as Anthropic.Beta.BetaMessageParam[],
    compaction: { type: 'summarize', instructions: input.instructions },
    betas: [COMPACT_BETA],
  };
}

const BETA_REFUSAL =
  /anthropic-beta|compact-2026-09-04|\bcompaction\b[^.]*(extra inputs|not permitted|unknown|unexpected|not supported|unsupported)/i;

/** Why a refused compaction request goes to the local summariser; null: an error like any other call's. */
function refusalOf(err: unknown): { reason: 'beta_refused' | 'request_refused'; detail: string } | null {
  if (!(err instanceof APIError) || err.status === undefined) return null;
  const body = (err.error ?? {}) as { error?: { message?: unknown; details?: { error_code?: unknown } } };
  const message = typeof body.error?.message === 'string' ? body.error.message : err.message;
  const code = typeof body.error?.details?.error_code === 'string' ? body.error.details.error_code : null;
  const detail = `${err.status}${code ? ` ${code}` : ''}`;
  if (err.status === 529 && code === 'compaction_unavailable') return { reason: 'request_refused', detail };
  if (![400, 404, 422].includes(err.status)) return null;
  if (code === null && BETA_REFUSAL.test(message)) return { reason: 'beta_refused', detail };
  return { reason: 'request_refused', detail };
}

/** The compaction entries of `usage.iterations` summed; the top-level usage when there are none. */
export function summaryUsageOf(usage: unknown): SummaryUsage {
  const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const record = (usage ?? {}) as Record<string, unknown> & { iterations?: unknown };
  const iterations = Array.isArray(record.iterations) ? (record.iterations as Record<string, unknown>[]) : [];
  const compactions = iterations.filter((entry) => entry?.type === 'compaction');
  const entries = compactions.length > 0 ? compactions : [record];
  return entries.reduce<SummaryUsage>(
    (sum, entry) => ({
      input_tokens: sum.input_tokens + num(entry.input_tokens),
      output_tokens: sum.output_tokens + num(entry.output_tokens),
      cache_read_tokens: sum.cache_read_tokens + num(entry.cache_read_input_tokens),
      cache_write_tokens: sum.cache_write_tokens + num(entry.cache_creation_input_tokens),
    }),
    { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
  );
}

/** The block of a compaction answer: stop_reason `compaction` and a `compaction` block with content. */
function blockOf(message: Anthropic.Beta.BetaMessage): AnthropicCompactionBlock | null {
  if (message.stop_reason !== 'compaction') return null;
  const found = message.content.find((block) => block.type === 'compaction');
  if (found?.type !== 'compaction' || typeof found.content !== 'string' || found.content.trim() === '') {
    return null;
  }
  return {
    type: 'compaction',
    content: found.content,
    encrypted_content: found.encrypted_content ?? null,
    ...(found.signature !== undefined ? { signature: found.signature } : {}),
    ...(found.tool_changes !== undefined ? { tool_changes: found.tool_changes as unknown[] | null } : {}),
  };
}

/** One compaction request (one attempt: retries belong to the summarize activity's policy). */
export async function requestCompaction(
  client: AnthropicProviderClient,
  input: CompactionRequestInput,
): Promise<CompactionOutcome> {
  const site: LlmCallSite = { provider: client.id, model: input.model };
  let message: Anthropic.Beta.BetaMessage;
  try {
    const body = compactionRequestBody(input);
    message = await client.anthropic.beta.messages.create(body, input.signal ? { signal: input.signal } : {});
  } catch (err) {
    const refused = refusalOf(err);
    if (refused) return { kind: 'fallback', ...refused };
    throw classifyProviderError(err, site);
  }
  const block = blockOf(message);
  if (!block) return { kind: 'fallback', reason: 'no_block', detail: `stop_reason ${message.stop_reason ?? 'null'}` };
  return { kind: 'block', block, usage: summaryUsageOf(message.usage) };
}

// ---------------------------------------------------------------------------------------------------------------
// The compactor of a summary route.

/** The summary route's compaction requests (the client is made on first use: a missing key fails that request). */
export interface AnthropicCompactor {
  readonly model: string;
  /** The route the blocks come from (provider, base URL, account). */
  origin(): ReplayOrigin;
  compact(input: Omit<CompactionRequestInput, 'model'>): Promise<CompactionOutcome>;
}

/** SPEC §19 `anthropic_native`: a compactor when the plan's summary route supports blocks, else null. */
export function anthropicCompactorFor(
  plan: SummarizerPlan,
  env?: Readonly<Record<string, string | undefined>>,
): AnthropicCompactor | null {
  const { provider, model } = plan.primary;
  if (!anthropicNativeRoute(provider, model)) return null;
  let client: AnthropicProviderClient | null = null;
  const clientOf = (): AnthropicProviderClient => {
    if (!client) {
      try {
        const made = createProviderClient(provider, { timeoutMs: plan.timeoutSeconds * 1000, ...(env ? { env } : {}) });
        if (made.kind !== 'anthropic') throw new Error(`provider '${provider.id}' is not of the anthropic kind`);
        client = made;
      } catch (err) {
        throw classifyProviderError(err, { provider: provider.id, model });
      }
    }
    return client;
  };
  return {
    model,
    origin: () => originOf(clientOf()),
    compact: (input) => requestCompaction(clientOf(), { ...input, model }),
  };
}
