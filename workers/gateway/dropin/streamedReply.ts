// A streamed Chat Completion relayed to the client as the provider sends it (Server-Sent Events payloads, ending
// with `[DONE]`), while the reply is put together for the store (issue #12). The store needs the provider's usage
// reading, so the upstream request asks for the usage chunk; a client that did not ask for it does not get it.
import type { ChatMessage, Usage } from '../../../engine/types.js';
import {
  type ChatCompletionChunk,
  type CompletionBody,
  UpstreamHttpError,
} from '../../../infra/llm/openaiPassthrough.js';

/** The usage reading the store keeps (SPEC §7: the prompt is the whole input). */
export function usageOf(usage: ChatCompletionChunk['usage'] | null | undefined): Usage | undefined {
  if (!usage) return undefined;
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
}

/** Stores the whole reply with its usage; resolves once it is committed. */
export type StoreReply = (reply: ChatMessage, usage: Usage | undefined) => Promise<unknown>;

/** The error object of an SSE error event (OpenAI's shape), for an error after the stream began. */
function errorObject(err: unknown): Record<string, unknown> {
  const inner = err instanceof UpstreamHttpError ? err.body?.error : undefined;
  if (inner && typeof inner === 'object') return inner as Record<string, unknown>;
  const message = err instanceof Error ? err.message : String(err);
  return { message: `the stream was interrupted: ${message}`, type: 'api_error', param: null, code: null };
}

export class StreamedReply {
  private readonly clientWantsUsage: boolean;

  constructor(request: CompletionBody) {
    const options = request.stream_options as { include_usage?: unknown } | null | undefined;
    this.clientWantsUsage = options?.include_usage === true;
  }

  /** The upstream request: `body`, with `stream_options.include_usage` when the client did not set it. */
  upstreamBody(body: CompletionBody): CompletionBody & { stream: true } {
    if (this.clientWantsUsage) return body as CompletionBody & { stream: true };
    const options = typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
    return { ...body, stream: true, stream_options: { ...options, include_usage: true } };
  }

  /** The client's events; the reply goes to the store before `[DONE]` (the next request waits for its commit). */
  async *relay(chunks: AsyncIterable<ChatCompletionChunk>, store: StoreReply): AsyncGenerator<string> {
    let content: string | null = null;
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    let usage: ChatCompletionChunk['usage'];
    try {
      for await (const chunk of chunks) {
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices?.find((c) => c.index === 0)?.delta;
        if (typeof delta?.content === 'string') content = (content ?? '') + delta.content;
        for (const call of delta?.tool_calls ?? []) {
          calls[call.index] ??= { id: '', name: '', arguments: '' };
          const at = calls[call.index] as { id: string; name: string; arguments: string };
          if (call.id) at.id = call.id;
          if (call.function?.name) at.name += call.function.name;
          if (call.function?.arguments) at.arguments += call.function.arguments;
        }
        if (this.clientWantsUsage) {
          yield JSON.stringify(chunk);
          continue;
        }
        // The usage chunk (no choices) and the `usage: null` of the others were not asked for.
        if (chunk.choices.length === 0 && chunk.usage) continue;
        const { usage: _notAsked, ...rest } = chunk;
        yield JSON.stringify(rest);
      }
      const reply: ChatMessage = { role: 'assistant', content };
      const toolCalls = calls.filter(Boolean);
      if (toolCalls.length > 0) {
        reply.tool_calls = toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        }));
      }
      await store(reply, usageOf(usage));
    } catch (err) {
      yield JSON.stringify({ error: errorObject(err) });
      return;
    }
    yield '[DONE]';
  }
}
