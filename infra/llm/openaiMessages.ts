// The internal `ChatMessage` (SPEC §1.2) as OpenAI Chat Completions takes it, and the request body of a call, put
// together from each message's JSON as first serialised (jsonBody.ts).
import type OpenAI from 'openai';
import type { ChatMessage, ContentPart, ToolCall } from '../../engine/types.js';
import { JsonByObject, objectWithArray } from './jsonBody.js';

function openAIPart(part: ContentPart): Record<string, unknown> {
  const marker = part.cache_control ? { cache_control: { ...part.cache_control } } : {};
  if (part.type === 'image_url') return { type: 'image_url', image_url: { ...part.image_url }, ...marker };
  return { type: 'text', text: part.text, ...marker };
}

function openAIToolCall(call: ToolCall): Record<string, unknown> {
  return { id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } };
}

/** The wire fields of SPEC §1.2 (plus cache_control when caching is on); OpenAI's tool messages take no `name`. */
export function toOpenAIMessage(message: ChatMessage): OpenAI.Chat.ChatCompletionMessageParam {
  const content = Array.isArray(message.content) ? message.content.map(openAIPart) : message.content;
  const wire: Record<string, unknown> = { role: message.role, content };
  if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
    wire.tool_calls = message.tool_calls.map(openAIToolCall);
  }
  if (message.role === 'tool') wire.tool_call_id = message.tool_call_id ?? '';
  else if (message.name !== undefined) wire.name = message.name;
  if (message.cache_control) wire.cache_control = { ...message.cache_control };
  return wire as unknown as OpenAI.Chat.ChatCompletionMessageParam;
}

const wireJson = new JsonByObject<ChatMessage>(toOpenAIMessage);

/**
 * The UTF-8 body of a Chat Completions request: byte for byte
 * `JSON.stringify({ model, messages: messages.map(toOpenAIMessage), ...rest })`.
 */
export function chatCompletionsBody(
  model: string,
  messages: readonly ChatMessage[],
  rest: Readonly<Record<string, unknown>>,
): Buffer {
  return objectWithArray(
    { model },
    'messages',
    messages.map((message) => wireJson.get(message)),
    rest,
  );
}
