// The drop-in OpenAI Chat Completions endpoint (issue #12): a client written for OpenAI points its base URL at the
// gateway and sends its whole history on every request. The history is matched against the stored transcript
// (history.ts), only its new suffix is stored (accepted = committed, before the model is called), the decisions due
// for it are waited for (the hygiene pre-step of SPEC §11 included), and the provider serving the requested model is
// sent either the client's own request, unchanged, while the conversation was never compacted (cache-neutral: to
// Claude over a caching route, with two breakpoints of ours if the client set none, cacheBreakpoints.ts), or the
// same request with the compacted, sanitised transcript as its messages. The reply is stored with the provider's
// usage, which drives the in-loop check (SPEC §7) and background compaction like any other batch. A model a Codex
// app-server serves is answered by the worker's app-server instead (appServerTurn.ts, SPEC §15.2).
import type OpenAI from 'openai';
import { prepareContext } from '../../../engine/index.js';
import type { ChatMessage } from '../../../engine/types.js';
import { toOpenAIMessage } from '../../../infra/llm/openaiMessages.js';
import {
  type ChatCompletion,
  type CompletionBody,
  createCompletion,
  streamCompletion,
} from '../../../infra/llm/openaiPassthrough.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';
import type { ChatTurnReply } from '../chatTurns.js';
import { appServerTurn } from './appServerTurn.js';
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
    if (provider.api === 'codex_app_server')
      return this.onAppServer(tenantId, body, history, provider, conversationHeader);
    // Refused before anything is stored: a provider without its key.
    const client = this.upstreams.clientFor(provider);
    const turn = await this.flow.begin(tenantId, history, conversationHeader, {
      model: body.model,
      provider: provider.id,
      tools: body.tools,
    });
    const upstream = turn.compacted
      ? this.withCompacted(body, turn.compacted, provider)
      : withOwnChatBreakpoints(body, provider, this.deps.cacheTtl).body;
    if (body.stream === true) {
      const streamed = new StreamedReply(body);
      const chunks = await streamCompletion(client, provider.id, streamed.upstreamBody(upstream));
      return { kind: 'stream', conversationId: turn.conversationId, events: streamed.relay(chunks, turn.store) };
    }
    const completion = await createCompletion(client, provider.id, upstream);
    const conversationId = await turn.store(replyOf(completion.choices[0]?.message), usageOf(completion.usage));
    return { kind: 'json', conversationId, completion };
  }

  /**
   * SPEC §15.2: the worker's app-server answers (appServerTurn.ts); the reply as a completion, or streamed as the
   * chunks of one. The client's `tools` are not offered: the Codex agent runs its own.
   */
  private async onAppServer(
    tenantId: string,
    body: CompletionBody,
    history: ChatMessage[],
    provider: ProviderConfig,
    header: string | undefined,
  ): Promise<CompletionAnswer> {
    const start = { model: body.model, provider: provider.id };
    const { conversationId, turn } = await appServerTurn(
      this.flow,
      this.deps.conversations,
      tenantId,
      history,
      header,
      start,
    );
    const completion = completionOf(body.model, turn);
    if (body.stream !== true) return { kind: 'json', conversationId, completion };
    const options = body.stream_options as { include_usage?: unknown } | null | undefined;
    return { kind: 'stream', conversationId, events: chunksOf(completion, options?.include_usage === true) };
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

/** A turn the workflow ran, as the completion a Chat Completions client reads. */
function completionOf(model: string, turn: ChatTurnReply): ChatCompletion {
  const content = typeof turn.reply.content === 'string' ? turn.reply.content : null;
  return {
    id: `chatcmpl-${turn.turnId.replace(/^turn:/, '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: turn.usage.prompt_tokens,
      completion_tokens: turn.usage.completion_tokens,
      total_tokens: turn.usage.total_tokens,
      prompt_tokens_details: { cached_tokens: turn.usage.cache_read_tokens },
    },
  };
}

/** The completion as the chunks of a stream: the role, the text, the finish, the usage when asked for. */
async function* chunksOf(completion: ChatCompletion, includeUsage: boolean): AsyncGenerator<string> {
  const head = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
  yield chunk({ role: 'assistant', content: '' }, null);
  const content = completion.choices[0]?.message.content;
  if (content) yield chunk({ content }, null);
  yield chunk({}, 'stop');
  if (includeUsage) yield JSON.stringify({ ...head, choices: [], usage: completion.usage });
  yield '[DONE]';
}
