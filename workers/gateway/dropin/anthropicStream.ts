// A streamed Anthropic message relayed to the client as the provider sends it (Server-Sent Events with their event
// names), while the reply is put together for the store (issue #12): text blocks, tool_use blocks with their input
// from the partial JSON, the usage of message_start and message_delta. Thinking blocks reach the client; the store
// keeps none (engine ChatMessage has no place for them).
import type { ChatMessage, Usage } from '../../../engine/types.js';
import type { AnthropicMessage, AnthropicStreamEvent } from '../../../infra/llm/anthropicPassthrough.js';
import { fromAnthropicResponse } from '../../../infra/llm/fromAnthropic.js';
import { UpstreamHttpError } from '../../../infra/llm/upstreamErrors.js';
import { sseFrame } from '../sse.js';
import type { StoreReply } from './streamedReply.js';

/** SPEC §7 reading of an Anthropic usage: the prompt is the whole input, cache reads and writes included. */
export function anthropicUsage(usage: Partial<AnthropicMessage['usage']> | null | undefined): Usage | undefined {
  if (!usage) return undefined;
  const prompt =
    (usage.input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
  const completion = usage.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The error event of an interrupted stream, in Anthropic's shape. */
function errorEvent(err: unknown): string {
  const body = err instanceof UpstreamHttpError ? err.body : null;
  if (body && body.type === 'error') return sseFrame('error', body);
  const message = err instanceof Error ? err.message : String(err);
  return sseFrame('error', {
    type: 'error',
    error: { type: 'api_error', message: `the stream was interrupted: ${message}` },
  });
}

type Block = {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  json?: string;
  content?: string | null;
};

export async function* relayAnthropicStream(
  events: AsyncIterable<AnthropicStreamEvent>,
  store: StoreReply,
): AsyncGenerator<string> {
  const blocks: Block[] = [];
  let usage: Partial<AnthropicMessage['usage']> = {};
  try {
    for await (const event of events) {
      if (event.type === 'message_start') usage = { ...event.message.usage };
      if (event.type === 'message_delta') usage = { ...usage, ...(event.usage as Partial<AnthropicMessage['usage']>) };
      if (event.type === 'content_block_start') blocks[event.index] = { ...(event.content_block as Block) };
      if (event.type === 'content_block_delta') {
        const block = blocks[event.index];
        if (block && event.delta.type === 'text_delta') block.text = (block.text ?? '') + event.delta.text;
        if (block && event.delta.type === 'input_json_delta')
          block.json = (block.json ?? '') + event.delta.partial_json;
        // The compaction beta streams a block's summary as compaction_delta (its readable content is stored).
        const delta = event.delta as { type: string; content?: string | null };
        if (block && delta.type === 'compaction_delta' && typeof delta.content === 'string') {
          block.content = (block.content ?? '') + delta.content;
        }
      }
      yield sseFrame(event.type, event);
    }
    const content = blocks.filter(Boolean).map((block) => {
      if (block.type !== 'tool_use' || block.json === undefined) return block;
      let input: unknown = {};
      try {
        input = block.json === '' ? {} : JSON.parse(block.json);
      } catch {
        input = {};
      }
      return { ...block, input };
    });
    const reply: ChatMessage = fromAnthropicResponse({ content: content as unknown as AnthropicMessage['content'] });
    await store(reply, anthropicUsage(usage));
  } catch (err) {
    yield errorEvent(err);
  }
}
