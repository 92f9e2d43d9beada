// The drop-in OpenAI Chat Completions endpoint (issue #12): a client written for OpenAI points its base URL at the
// gateway and sends its whole history on every request. The history is matched against the stored transcript
// (history.ts), only its new suffix is stored (accepted = committed, before the model is called), the decisions due
// for it are waited for (the hygiene pre-step of SPEC §11 included), and the provider serving the requested model is
// sent either the client's own request, unchanged, while the conversation was never compacted (cache-neutral: to
// Claude over a caching route, with two breakpoints of ours if the client set none, cacheBreakpoints.ts), or the
// same request with the compacted, sanitised transcript as its messages. The reply is stored with the provider's
// usage, which drives the in-loop check (SPEC §7) and background compaction like any other batch.
import type OpenAI from 'openai';
import { prepareContext } from '../../../engine/index.js';
import type { ChatMessage } from '../../../engine/types.js';
import { toOpenAIMessage } from '../../../infra/llm/chat.js';
import {
  type ChatCompletion,
  type CompletionBody,
  createCompletion,
  streamCompletion,
} from '../../../infra/llm/openaiPassthrough.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';
import { withOwnChatBreakpoints } from './cacheBreakpoints.js';
import { DropinFlow } from './conversationFlow.js';
import { StreamedReply, usageOf } from './streamedReply.js';
import { checkStorable, type DropinDeps, Upstreams } from './upstream.js';

export { DropinRequestError } from './conversationFlow.js';

const SOURCE = 'openai-chat';

export type OpenAIChatDeps = DropinDeps;

/** The answer, and the conversation its reply is stored in (null: a branch named by the reply, still streaming). */
export type CompletionAnswer =
  | { kind: 'json'; conversationId: string; completion: ChatCompletion }
  | { kind: 'stream'; conversationId: string | null; events: AsyncIterable<string> };

/** The client's message as the store keeps it (SPEC §1.2 roles: a `developer` message is a system message). */
function storedMessage(message: Record<string, unknown>): ChatMessage {
  const stored: Record<string, unknown> = {
    role: message.role === 'developer' ? 'system' : message.role,
    content: message.content ?? null,
  };
  for (const field of ['tool_calls', 'tool_call_id', 'name'] as const) {
    if (message[field] !== undefined) stored[field] = message[field];
  }
  return stored as unknown as ChatMessage;
}

/** The stored reply of a completion's first choice. */
export function replyOf(message: OpenAI.Chat.ChatCompletionMessage | undefined): ChatMessage {
  const reply: ChatMessage = { role: 'assistant', content: message?.content ?? null };
  const calls = (message?.tool_calls ?? []).filter((c) => c.type === 'function');
  if (calls.length > 0) {
    reply.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  return reply;
}

export class OpenAIChatCompletions {
  private readonly flow: DropinFlow;
  private readonly upstreams: Upstreams<'openai'>;

  constructor(private readonly deps: OpenAIChatDeps) {
    this.flow = new DropinFlow(deps.conversations, 'oa', SOURCE);
    this.upstreams = new Upstreams(deps, 'openai', 'POST /v1/chat/completions');
  }

  async complete(tenantId: string, body: CompletionBody, conversationHeader?: string): Promise<CompletionAnswer> {
    const history = this.validate(body);
    const provider = this.upstreams.providerFor(body.model);
    const turn = await this.flow.begin(tenantId, history, conversationHeader, {
      model: body.model,
      provider: provider.id,
      tools: body.tools,
    });
    const upstream = turn.compacted
      ? this.withCompacted(body, turn.compacted, provider)
      : withOwnChatBreakpoints(body, provider, this.deps.cacheTtl).body;
    const client = this.upstreams.clientFor(provider);
    if (body.stream === true) {
      const streamed = new StreamedReply(body);
      const chunks = await streamCompletion(client, provider.id, streamed.upstreamBody(upstream));
      return { kind: 'stream', conversationId: turn.conversationId, events: streamed.relay(chunks, turn.store) };
    }
    const completion = await createCompletion(client, provider.id, upstream);
    const conversationId = await turn.store(replyOf(completion.choices[0]?.message), usageOf(completion.usage));
    return { kind: 'json', conversationId, completion };
  }

  /** The request with the conversation's compacted, sanitised transcript as its messages. */
  private withCompacted(body: CompletionBody, transcript: ChatMessage[], provider: ProviderConfig): CompletionBody {
    const { messages } = prepareContext(transcript, {
      model: body.model,
      cachingRoute: provider.cachingRoute,
      cacheTtl: this.deps.cacheTtl,
    });
    return { ...body, messages: messages.map(toOpenAIMessage) };
  }

  /** The history as stored messages; 400 naming the field when the store could not keep it. */
  private validate(body: CompletionBody): ChatMessage[] {
    const history = body.messages.map((m) => storedMessage(m as Record<string, unknown>));
    checkStorable(history, (problem, offset) =>
      problem.replace(/^messages\[(\d+)\]\.message/, (_, j) => `messages[${offset + Number(j)}]`),
    );
    return history;
  }
}
