// The drop-in Anthropic Messages endpoint (issue #12): a client written for Anthropic points its base URL at the
// gateway and sends its whole history (system, content blocks, tool_use / tool_result) on every request. The history
// is read as stored messages (infra/llm/anthropicMessages.ts), stored and decided on by DropinFlow, and the provider
// serving the model gets the client's own request while the conversation was never compacted (its cache breakpoints
// and thinking blocks as the client sent them; ours only when it set none, cacheBreakpoints.ts), or the same request
// with the compacted, sanitised transcript as `system` and `messages` (cache breakpoints placed by SPEC §12). Signed thinking blocks are never sent with content
// a compaction changed: the stored transcript holds none, and the answer says how many were left out.
import type Anthropic from '@anthropic-ai/sdk';
import { prepareContext } from '../../../engine/index.js';
import type { ChatMessage } from '../../../engine/types.js';
import {
  fromAnthropicRequest,
  fromAnthropicResponse,
  toAnthropicRequest,
} from '../../../infra/llm/anthropicMessages.js';
import {
  type AnthropicMessage,
  countTokens,
  createMessage,
  type MessagesBody,
  streamMessage,
} from '../../../infra/llm/anthropicPassthrough.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';
import { anthropicUsage, relayAnthropicStream } from './anthropicStream.js';
import { withOwnBreakpoints } from './cacheBreakpoints.js';
import { DropinFlow, DropinRequestError } from './conversationFlow.js';
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
    });
    const thinkingDropped = turn.compacted ? thinkingBlocks(body.messages) : 0;
    const upstream = turn.compacted
      ? this.withCompacted(body, turn.compacted, provider)
      : withOwnBreakpoints(body, provider, this.deps.cacheTtl).body;
    const client = this.upstreams.clientFor(provider);
    const forwarded = this.forwarded(headers);
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

  private forwarded(headers: Record<string, string | string[] | undefined>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = headers[name];
      if (typeof value === 'string') out[name] = value;
    }
    return out;
  }

  /** The request with the conversation's compacted, sanitised, cache-marked transcript as system and messages. */
  private withCompacted(body: MessagesBody, transcript: ChatMessage[], provider: ProviderConfig): MessagesBody {
    const { messages } = prepareContext(transcript, {
      model: body.model,
      cachingRoute: provider.cachingRoute,
      cacheTtl: this.deps.cacheTtl,
    });
    const { system, messages: wire } = toAnthropicRequest(messages);
    const { system: _clientSystem, ...rest } = body;
    return { ...rest, ...(system !== undefined ? { system } : {}), messages: wire };
  }
}
