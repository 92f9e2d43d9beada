// The internal `ChatMessage` (SPEC §1.2) as OpenAI Chat Completions takes it, and the request body of a call.
//
// The body is put together from each message's JSON, kept per message object: a conversation's messages are the
// same objects from one turn to the next while the gateway keeps its transcript (workers/gateway/transcriptCache.ts)
// and never change after they are made (the engine never mutates a message: a cache marker or a stub is a copy), so
// only what is new since the previous turn is serialised. Serialising the whole transcript on every turn was the
// largest single cost of a chat turn in the gateway (issue #11, `bench:load --chat`: 13 % of its main thread, plus
// measuring and encoding the string again in fetch). The bytes are exactly those of `JSON.stringify` of the body.
import type OpenAI from 'openai';
import type { ChatMessage, ContentPart, ToolCall } from '../../engine/types.js';

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

/** Each message's wire JSON in UTF-8, by message object (held no longer than the message). */
const wireJson = new WeakMap<ChatMessage, Buffer>();

function messageJson(message: ChatMessage): Buffer {
  let json = wireJson.get(message);
  if (json === undefined) {
    const text = JSON.stringify(toOpenAIMessage(message));
    // Not from Node's shared 8 KB pool: a slice kept this long would keep its whole slab.
    json = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    json.write(text);
    wireJson.set(message, json);
  }
  return json;
}

const COMMA = Buffer.from(',');

/**
 * The UTF-8 body of a Chat Completions request: byte for byte
 * `JSON.stringify({ model, messages: messages.map(toOpenAIMessage), ...rest })`.
 */
export function chatCompletionsBody(
  model: string,
  messages: readonly ChatMessage[],
  rest: Readonly<Record<string, unknown>>,
): Buffer {
  const pieces: Buffer[] = [Buffer.from(`{"model":${JSON.stringify(model)},"messages":[`)];
  for (let i = 0; i < messages.length; i++) {
    if (i > 0) pieces.push(COMMA);
    pieces.push(messageJson(messages[i] as ChatMessage));
  }
  const tail = JSON.stringify(rest);
  pieces.push(Buffer.from(tail === '{}' ? ']}' : `],${tail.slice(1)}`));
  return Buffer.concat(pieces);
}
