// The drop-in Anthropic Messages endpoint (issue #12): a client written for Anthropic points its base URL at the
// gateway and sends its whole history (system, content blocks, tool_use / tool_result) on every request. The history is
// read as stored messages (infra/llm/fromAnthropic.ts), stored and decided on by DropinFlow, and the provider serving
// the model gets the client's own request while the conversation was never compacted (its cache breakpoints and
// thinking blocks as the client sent them; ours only when it set none, cacheBreakpoints.ts), or the same request with
// the compacted, sanitised transcript as `system` and `messages` (cache breakpoints placed by SPEC §12). Signed
// thinking blocks are never sent with content a compaction changed: the stored transcript holds none, and the answer
// says how many were left out.
import type Anthropic from '@anthropic-ai/sdk';
import { prepareContext } from '../../../engine/index.js';
import { sameOrigin } from '../../../engine/nativeCompaction.js';
import type { ChatMessage } from '../../../engine/types.js';
import { selectNativeSummary } from '../../../infra/db/nativeSummaries.js';
import { READ_ONLY, withTenant } from '../../../infra/db/tenant.js';
import {
  COMPACT_BETA,
  type LeadingCompaction,
  rowsAfterNativeSummary,
  textAfterBlock,
  toAnthropicRequestWithBlock,
} from '../../../infra/llm/anthropicCompaction.js';
import { toAnthropicRequest } from '../../../infra/llm/anthropicMessages.js';
import {
  type AnthropicMessage,
  countTokens,
  createMessage,
  type MessagesBody,
  streamMessage,
} from '../../../infra/llm/anthropicPassthrough.js';
import { fromAnthropicRequest, fromAnthropicResponse } from '../../../infra/llm/fromAnthropic.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';
import { anthropicUsage, relayAnthropicStream } from './anthropicStream.js';
import { withOwnBreakpoints } from './cacheBreakpoints.js';
import { DropinFlow, DropinRequestError, type DropinTurn } from './conversationFlow.js';
import { checkStorable, type DropinDeps, Upstreams } from './upstream.js';

const SOURCE = 'anthropic-messages';
/** Request headers of the client that go to the provider with its request. */
const FORWARDED_HEADERS = ['anthropic-beta'] as const;

export type AnthropicMessagesDeps = DropinDeps;

export type MessagesAnswer = {
  /** The conversation the reply is stored in (null: a branch named by the reply, still streaming). */
  conversationId: string | null;
  /** Thinking blocks of the client's history left out because a compaction changed what preceded them. */
  thinkingDropped: number;
} & ({ kind: 'json'; message: AnthropicMessage } | { kind: 'stream'; frames: AsyncIterable<string> });

/** Thinking blocks (signed or redacted) in a history. */
function thinkingBlocks(messages: readonly unknown[]): number {
  let count = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown }).content;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      const type = (block as { type?: unknown }).type;
      if (type === 'thinking' || type === 'redacted_thinking') count += 1;
    }
  }
  return count;
}

export class AnthropicMessages {
  private readonly flow: DropinFlow;
  private readonly upstreams: Upstreams<'anthropic'>;

  constructor(private readonly deps: AnthropicMessagesDeps) {
    this.flow = new DropinFlow(deps.conversations, 'an', SOURCE);
    this.upstreams = new Upstreams(deps, 'anthropic', 'POST /v1/messages');
  }

  async create(
    tenantId: string,
    body: MessagesBody,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<MessagesAnswer> {
    const history = this.historyOf(body);
    const provider = this.upstreams.providerFor(body.model);
    const header = headers['x-conversation-id'];
    const turn = await this.flow.begin(tenantId, history, typeof header === 'string' ? header : undefined, {
      model: body.model,
      provider: provider.id,
      tools: body.tools,
      // The compaction beta's own request (e.g. the SDK's compactBeforeNextTurn): the client compacts by itself.
      compacts: body.compaction !== undefined && body.compaction !== null,
    });
    const thinkingDropped = turn.compacted ? thinkingBlocks(body.messages) : 0;
    const client = this.upstreams.clientFor(provider);
    // A compaction block this route issued stands in for the rows it summarised (SPEC §19 anthropic_native).
    const block = turn.compacted ? await this.blockOf(tenantId, turn, provider) : null;
    const upstream = turn.compacted
      ? this.withCompacted(body, block?.messages ?? turn.compacted, provider, block?.leading ?? null)
      : withOwnBreakpoints(body, provider, this.deps.cacheTtl).body;
    const forwarded = this.forwarded(headers, block !== null);
    if (body.stream === true) {
      const events = await streamMessage(client, provider.id, { ...upstream, stream: true }, forwarded);
      const frames = relayAnthropicStream(events, turn.store);
      return { kind: 'stream', conversationId: turn.conversationId, thinkingDropped, frames };
    }
    const message = await createMessage(client, provider.id, upstream, forwarded);
    const conversationId = await turn.store(fromAnthropicResponse(message), anthropicUsage(message.usage));
    return { kind: 'json', conversationId, thinkingDropped, message };
  }

  /** The provider's count of the request's input tokens (nothing is stored). */
  async countTokens(
    body: MessagesBody,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<Anthropic.MessageTokensCount> {
    this.historyOf(body);
    const provider = this.upstreams.providerFor(body.model);
    return countTokens(this.upstreams.clientFor(provider), provider.id, body, this.forwarded(headers));
  }

  /** The history as stored messages; 400 naming the field when the store could not keep it. */
  private historyOf(body: MessagesBody): ChatMessage[] {
    let history: ChatMessage[];
    try {
      const system = body.system as Parameters<typeof fromAnthropicRequest>[0]['system'];
      history = fromAnthropicRequest({
        ...(system !== undefined ? { system } : {}),
        messages: body.messages as Anthropic.MessageParam[],
      });
    } catch (err) {
      throw new DropinRequestError(`messages: ${(err as Error).message}`, 'messages');
    }
    // Stored messages do not line up with the request's messages (tool results are messages of their own).
    checkStorable(history, (problem) => problem.replace(/^messages\[\d+\]\.message\.?/, 'messages: '));
    return history;
  }

  /** The client's headers that go upstream; with a compaction block, its beta added to the client's betas. */
  private forwarded(headers: Record<string, string | string[] | undefined>, withBlock = false): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = headers[name];
      if (typeof value === 'string') out[name] = value;
    }
    if (withBlock) {
      const betas = (out['anthropic-beta'] ?? '')
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean);
      if (!betas.includes(COMPACT_BETA)) out['anthropic-beta'] = [...betas, COMPACT_BETA].join(',');
    }
    return out;
  }

  /** The session's compaction block when this route issued it, and the transcript rows that follow it. */
  private async blockOf(
    tenantId: string,
    turn: DropinTurn,
    provider: ProviderConfig,
  ): Promise<{ messages: ChatMessage[]; leading: LeadingCompaction } | null> {
    const ids = turn.compactedRowIds;
    if (!turn.compacted || !ids || !turn.native) return null;
    const sessionId = turn.native.sessionId;
    const stored = await withTenant(
      this.deps.conversations.readDb,
      tenantId,
      (tx) => selectNativeSummary(tx, tenantId, sessionId),
      READ_ONLY,
    );
    if (!stored || !sameOrigin(stored.native.origin, this.upstreams.originOf(provider))) return null;
    const rows = turn.compacted.map((message, i) => ({ id: ids[i] as number, message }));
    const after = rowsAfterNativeSummary(rows, { rowId: stored.summaryRowId, summaryText: stored.summaryText });
    if (!after) return null;
    const { block } = stored.native;
    return {
      messages: after.map((row) => row.message),
      leading: { block, after: textAfterBlock(stored.summaryBody, block) },
    };
  }

  /**
   * The request with the conversation's compacted, sanitised, cache-marked transcript as system and messages — after
   * the session's compaction block when there is one for this route.
   */
  private withCompacted(
    body: MessagesBody,
    transcript: ChatMessage[],
    provider: ProviderConfig,
    leading: LeadingCompaction | null,
  ): MessagesBody {
    const { messages } = prepareContext(transcript, {
      model: body.model,
      cachingRoute: provider.cachingRoute,
      cacheTtl: this.deps.cacheTtl,
    });
    // A client that sends system turns inside `messages` gets the later ones where they stand; others get every system
    // message in `system`, as a model that takes no system turn needs.
    const options = { systemInPlace: body.messages.some((m) => (m as { role?: unknown }).role === 'system') };
    const { system, messages: wire } = leading
      ? toAnthropicRequestWithBlock(messages, leading, options)
      : toAnthropicRequest(messages, options);
    const { system: _clientSystem, ...rest } = body;
    return { ...rest, ...(system !== undefined ? { system } : {}), messages: wire };
  }
}
