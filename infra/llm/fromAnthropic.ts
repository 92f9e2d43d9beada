// Anthropic's Messages API → the internal OpenAI-shaped `ChatMessage[]` (SPEC §1.2): the inverse of
// toAnthropicRequest (anthropicMessages.ts, whose header gives the round-trip rules).
//
// A `role: "system"` message inside `messages` is a system message where it stands, and a `compaction` block (the
// compaction beta's summary, which a client that compacts on its own sends back first) is its readable content, a text
// part; its signature and encrypted state stay with the client, which sends them again with every request.
//
// fromAnthropicResponse turns a response into the assistant ChatMessage: text blocks joined (a compaction block's
// content as text), tool_use → tool_calls.
import type Anthropic from '@anthropic-ai/sdk';
import type { CacheControl, ChatMessage, ContentPart, ToolCall } from '../../engine/types.js';
import {
  type AnthropicRequestMessages,
  type ImageBlock,
  RAW_ARGUMENTS_KEY,
  SYSTEM_TURN_FIELDS,
  type TextBlock,
  TOOL_ERROR,
} from './anthropicMessages.js';

type AnyBlock = { type: string; cache_control?: CacheControl | null } & Record<string, unknown>;

function markerOf(block: { cache_control?: CacheControl | null }): CacheControl | undefined {
  const marker = block.cache_control;
  if (!marker) return undefined;
  return marker.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
}

function withMarker<T extends object>(value: T, marker: CacheControl | undefined): T {
  return marker ? { ...value, cache_control: marker } : value;
}

function imageUrl(source: ImageBlock['source']): string {
  if (source.type === 'base64') return `data:${source.media_type};base64,${source.data}`;
  if (source.type === 'url') return source.url;
  return `file:${source.file_id}`;
}

function blockToPart(block: AnyBlock): ContentPart | null {
  if (block.type === 'text') {
    return withMarker<ContentPart>({ type: 'text', text: String(block.text) }, markerOf(block));
  }
  if (block.type === 'compaction') {
    return typeof block.content === 'string' ? { type: 'text', text: block.content } : null;
  }
  if (block.type === 'image') {
    const url = imageUrl(block.source as ImageBlock['source']);
    return withMarker<ContentPart>({ type: 'image_url', image_url: { url } }, markerOf(block));
  }
  return null;
}

function blocksToParts(blocks: readonly AnyBlock[]): ContentPart[] {
  return blocks.map(blockToPart).filter((part): part is ContentPart => part !== null);
}

/** tool_use `input` → tool-call arguments (rule 5). */
export function inputToArguments(input: unknown): string {
  const record = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : null;
  const keys = record ? Object.keys(record) : [];
  if (record && keys.length === 1 && keys[0] === RAW_ARGUMENTS_KEY && typeof record[RAW_ARGUMENTS_KEY] === 'string') {
    return record[RAW_ARGUMENTS_KEY];
  }
  return JSON.stringify(input ?? {});
}

function toolCallOf(block: AnyBlock): ToolCall {
  return {
    id: String(block.id),
    type: 'function',
    function: { name: String(block.name), arguments: inputToArguments(block.input) },
  };
}

/** Text (and image) blocks of an assistant turn that also has tool_use blocks (rule 4). */
function assistantCallContent(textBlocks: readonly AnyBlock[]): ChatMessage['content'] {
  if (textBlocks.length === 0) return null;
  const only = textBlocks.length === 1 ? textBlocks[0] : undefined;
  if (only && only.type === 'text' && !only.cache_control) return String(only.text);
  return blocksToParts(textBlocks);
}

function assistantFromBlocks(content: string | readonly AnyBlock[]): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const uses = content.filter((b) => b.type === 'tool_use');
  if (uses.length === 0) return { role: 'assistant', content: blocksToParts(content) };
  const textBlocks = content.filter((b) => b.type === 'text' || b.type === 'image');
  const message: ChatMessage = {
    role: 'assistant',
    content: assistantCallContent(textBlocks),
    tool_calls: uses.map(toolCallOf),
  };
  const lastUse = content[content.length - 1];
  const topLevel = message.content === null && lastUse?.type === 'tool_use' ? markerOf(lastUse) : undefined;
  return withMarker(message, topLevel);
}

function toolRowFromResult(block: AnyBlock, callNames: ReadonlyMap<string, string>): ChatMessage {
  const id = String(block.tool_use_id);
  const raw = block.content as string | AnyBlock[] | undefined;
  const content = raw === undefined ? null : typeof raw === 'string' ? raw : blocksToParts(raw);
  const name = callNames.get(id);
  const row: ChatMessage = { role: 'tool', content, tool_call_id: id, ...(name !== undefined ? { name } : {}) };
  if (block.is_error === true) Object.assign(row, { [TOOL_ERROR]: true });
  return withMarker(row, markerOf(block));
}

/** A user turn: tool_result blocks → tool rows; any other blocks → one user message after them. */
function userToMessages(content: string | readonly AnyBlock[], callNames: ReadonlyMap<string, string>): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const results = content.filter((b) => b.type === 'tool_result');
  if (results.length === 0) return [{ role: 'user', content: blocksToParts(content) }];
  const rows = results.map((block) => toolRowFromResult(block, callNames));
  const rest = content.filter((b) => b.type !== 'tool_result');
  return rest.length > 0 ? [...rows, { role: 'user', content: blocksToParts(rest) }] : rows;
}

function systemFromParam(system: string | readonly TextBlock[]): ChatMessage {
  if (typeof system === 'string') return { role: 'system', content: system };
  return { role: 'system', content: blocksToParts(system as unknown as AnyBlock[]) };
}

/** A system turn inside `messages`: a system message, its other fields kept beside it (SYSTEM_TURN_FIELDS). */
function systemTurn(message: Anthropic.MessageParam): ChatMessage {
  const { role: _role, content, ...fields } = message as unknown as Record<string, unknown>;
  const system = systemFromParam(content as string | TextBlock[]);
  return Object.keys(fields).length > 0 ? ({ ...system, [SYSTEM_TURN_FIELDS]: fields } as ChatMessage) : system;
}

/** The inverse of `toAnthropicRequest` (see the round-trip rules at the top of this file). */
export function fromAnthropicRequest(request: AnthropicRequestMessages): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (request.system !== undefined) out.push(systemFromParam(request.system));
  const callNames = new Map<string, string>();
  for (const message of request.messages) {
    const content = message.content as string | AnyBlock[];
    if (message.role === 'system') {
      out.push(systemTurn(message));
    } else if (message.role === 'assistant') {
      const assistant = assistantFromBlocks(content);
      for (const call of assistant.tool_calls ?? []) callNames.set(call.id, call.function.name);
      out.push(assistant);
    } else {
      out.push(...userToMessages(content, callNames));
    }
  }
  return out;
}

/**
 * An Anthropic response → the assistant ChatMessage: text blocks joined without separator (`null` content when
 * the reply is only tool calls, `''` when it is empty), tool_use blocks → tool_calls. Thinking and server-tool
 * blocks have no place in the OpenAI shape and are left out.
 */
export function fromAnthropicResponse(message: Pick<Anthropic.Message, 'content'>): ChatMessage {
  const blocks = message.content as unknown as AnyBlock[];
  const text = blocks
    .flatMap((b) => (b.type === 'text' ? [String(b.text)] : b.type === 'compaction' ? [String(b.content ?? '')] : []))
    .join('');
  const calls = blocks.filter((b) => b.type === 'tool_use').map(toolCallOf);
  if (calls.length === 0) return { role: 'assistant', content: text };
  return { role: 'assistant', content: text === '' ? null : text, tool_calls: calls };
}
