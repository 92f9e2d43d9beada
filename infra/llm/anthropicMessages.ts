// Conversion between the internal OpenAI-shaped `ChatMessage[]` (SPEC §1.2) and Anthropic's Messages API.
//
// toAnthropicRequest: system messages → the `system` parameter (a string, or text blocks keeping cache_control);
// user / assistant content strings and parts → strings and blocks (image_url: `data:` URLs → base64 sources, other
// URLs → url sources); assistant tool_calls → tool_use blocks (the JSON `arguments` string → the `input` object);
// tool rows → user messages of tool_result blocks, consecutive rows merged into one message as Anthropic requires;
// every cache_control (SPEC §12.2) moves to the block that stands for the marked part or message.
//
// fromAnthropicRequest is its inverse. A round trip gives back the same list — equal `role`, `content`,
// `tool_calls`, `tool_call_id`, `name` and `cache_control` — except where Anthropic's format has no room for the
// difference:
//   1. extra runtime properties and `image_url.detail` are not sent;
//   2. all system messages become one, first (exact for a single leading system message); their image parts are
//      dropped (Anthropic's system prompt is text only). With `systemInPlace` (a client that sends system turns
//      inside `messages`, as Claude Code does with recent models) only the leading ones do; each later one stays a
//      `role: "system"` message where it stands (text only as well), with the fields it came with
//      (SYSTEM_TURN_FIELDS);
//   3. a tool row comes back with `name` = the function name of its call (tool_result has no name field);
//   4. an assistant message with tool calls: `''` content comes back `null`, and content that is a single
//      unmarked text part comes back as its string;
//   5. `arguments` come back as `JSON.stringify(input)` (exact for compact JSON; blank → `{}`; text that is not a
//      JSON object travels as `{"_raw_arguments": text}` and comes back verbatim);
//   6. `null` content of user rows and of assistant rows without tool calls comes back `''` (Anthropic content is
//      never null), and a top-level cache_control on a message with no block to carry it is dropped;
//   7. a tool result the client marked `is_error: true` keeps the mark (a runtime property of its tool row,
//      TOOL_ERROR); `is_error: false` is the default and comes back absent.
//
// Read in the other direction, a `role: "system"` message inside `messages` is a system message where it stands, and
// a `compaction` block (the compaction beta's summary, which a client that compacts on its own sends back first) is
// its readable content, a text part; its signature and encrypted state stay with the client, which sends them again
// with every request.
//
// fromAnthropicResponse turns a response into the assistant ChatMessage: text blocks joined (a compaction block's
// content as text), tool_use → tool_calls.
import type Anthropic from '@anthropic-ai/sdk';
import type { CacheControl, ChatMessage, ContentPart, ToolCall } from '../../engine/types.js';
import type { ChatTool } from './types.js';

type TextBlock = Anthropic.TextBlockParam;
type ImageBlock = Anthropic.ImageBlockParam;
type ToolUseBlock = Anthropic.ToolUseBlockParam;
type ToolResultBlock = Anthropic.ToolResultBlockParam;
type RequestBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock;
type ImageMediaType = Anthropic.Base64ImageSource['media_type'];

export interface AnthropicRequestMessages {
  system?: string | TextBlock[];
  messages: Anthropic.MessageParam[];
}

/** Key under which tool-call arguments that are not a JSON object travel (rule 5 above). */
export const RAW_ARGUMENTS_KEY = '_raw_arguments';

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function copyMarker(marker: CacheControl | undefined): { cache_control?: CacheControl } {
  return marker ? { cache_control: { ...marker } } : {};
}

// ---------------------------------------------------------------------------------------------------------------
// ChatMessage → Anthropic.

function imageBlock(url: string, marker: CacheControl | undefined): ImageBlock {
  const data = DATA_URL.exec(url);
  const source: ImageBlock['source'] = data
    ? { type: 'base64', media_type: data[1] as ImageMediaType, data: data[2] ?? '' }
    : { type: 'url', url };
  return { type: 'image', source, ...copyMarker(marker) };
}

function partToBlock(part: ContentPart): TextBlock | ImageBlock {
  if (part.type === 'image_url') return imageBlock(part.image_url.url, part.cache_control);
  return { type: 'text', text: part.text, ...copyMarker(part.cache_control) };
}

function contentBlocks(content: ChatMessage['content']): (TextBlock | ImageBlock)[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.map(partToBlock) : [];
}

/** Tool-call arguments (a JSON string) → tool_use `input` (rule 5). */
export function argumentsToInput(args: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Not JSON: carried verbatim below.
  }
  return { [RAW_ARGUMENTS_KEY]: args };
}

function toolUseBlock(call: ToolCall): ToolUseBlock {
  return { type: 'tool_use', id: call.id, name: call.function.name, input: argumentsToInput(call.function.arguments) };
}

function userContent(message: ChatMessage): Anthropic.MessageParam['content'] {
  return Array.isArray(message.content) ? message.content.map(partToBlock) : (message.content ?? '');
}

function assistantContent(message: ChatMessage): Anthropic.MessageParam['content'] {
  const calls = message.tool_calls ?? [];
  if (calls.length === 0) return userContent(message);
  const blocks: RequestBlock[] = [...contentBlocks(message.content), ...calls.map(toolUseBlock)];
  const last = blocks[blocks.length - 1];
  // SPEC §12.2 step 7: a top-level marker (null or '' content) goes on the message's last block.
  if (message.cache_control && last) Object.assign(last, copyMarker(message.cache_control));
  return blocks;
}

/**
 * The runtime property (SPEC §1.2: stored in `extra`, never sent to another dialect) of a tool row whose result the
 * client marked as an error (`is_error: true`, e.g. a shell command that failed in Claude Code).
 */
export const TOOL_ERROR = 'is_error';

const isToolError = (row: ChatMessage) => (row as ChatMessage & { [TOOL_ERROR]?: unknown })[TOOL_ERROR] === true;

function toolResultBlock(row: ChatMessage): ToolResultBlock {
  const block: ToolResultBlock = { type: 'tool_result', tool_use_id: row.tool_call_id ?? '' };
  if (typeof row.content === 'string') block.content = row.content;
  else if (Array.isArray(row.content)) block.content = row.content.map(partToBlock);
  if (isToolError(row)) block.is_error = true;
  return Object.assign(block, copyMarker(row.cache_control));
}

function systemBlocks(systems: readonly ChatMessage[]): TextBlock[] {
  const blocks: TextBlock[] = [];
  for (const message of systems) {
    if (typeof message.content === 'string') {
      if (message.content !== '')
        blocks.push({ type: 'text', text: message.content, ...copyMarker(message.cache_control) });
      continue;
    }
    for (const part of message.content ?? []) {
      // Anthropic's system prompt is text only.
      if (part.type === 'text') blocks.push({ type: 'text', text: part.text, ...copyMarker(part.cache_control) });
    }
  }
  return blocks;
}

/** SPEC §12.2 keeps the system marker on a text part, so a plain string stays a string only when unmarked. */
function systemParam(systems: readonly ChatMessage[]): string | TextBlock[] | undefined {
  if (systems.length === 0) return undefined;
  const only = systems.length === 1 ? systems[0] : undefined;
  if (only && typeof only.content === 'string' && !only.cache_control) return only.content;
  const blocks = systemBlocks(systems);
  return blocks.length > 0 ? blocks : undefined;
}

/** How `toAnthropicRequest` writes system messages (rule 2). */
export interface AnthropicRequestOptions {
  /** Only the leading system messages become `system`; each later one stays a system message where it stands. */
  systemInPlace?: boolean;
}

/**
 * The runtime property (SPEC §1.2: stored in `extra`, never sent to another dialect) that keeps a system turn's own
 * fields besides `role` and `content`, e.g. Claude Code's per-turn `output_config`.
 */
export const SYSTEM_TURN_FIELDS = 'anthropic_turn_fields';

/** A system message that stays inside `messages` (`systemInPlace`): its text, and its own fields as it came. */
function inPlaceSystem(message: ChatMessage): Anthropic.MessageParam {
  const content = typeof message.content === 'string' ? message.content : systemBlocks([message]);
  const fields = (message as ChatMessage & { [SYSTEM_TURN_FIELDS]?: unknown })[SYSTEM_TURN_FIELDS];
  const own = typeof fields === 'object' && fields !== null && !Array.isArray(fields) ? fields : {};
  return { ...own, role: 'system', content };
}

/** The request's `system` and `messages` for a ChatMessage list. Never mutates its input. */
export function toAnthropicRequest(
  messages: readonly ChatMessage[],
  options: AnthropicRequestOptions = {},
): AnthropicRequestMessages {
  const leading = messages.findIndex((m) => m.role !== 'system');
  const hoisted = (i: number) => !options.systemInPlace || leading === -1 || i < leading;
  const systems = messages.filter((m, i) => m.role === 'system' && hoisted(i));
  const out: Anthropic.MessageParam[] = [];
  let pendingResults: ToolResultBlock[] | null = null;
  for (const [i, message] of messages.entries()) {
    if (message.role === 'system') {
      if (!hoisted(i)) {
        pendingResults = null;
        out.push(inPlaceSystem(message));
      }
      continue;
    }
    if (message.role === 'tool') {
      if (!pendingResults) {
        pendingResults = [];
        out.push({ role: 'user', content: pendingResults });
      }
      pendingResults.push(toolResultBlock(message));
      continue;
    }
    pendingResults = null;
    if (message.role === 'assistant') out.push({ role: 'assistant', content: assistantContent(message) });
    else out.push({ role: 'user', content: userContent(message) });
  }
  const system = systemParam(systems);
  return system === undefined ? { messages: out } : { system, messages: out };
}

/** OpenAI function tools → Anthropic tools. */
export function toAnthropicTools(tools: readonly ChatTool[]): Anthropic.Tool[] {
  return tools.map((tool) => ({
    name: tool.function.name,
    ...(tool.function.description !== undefined ? { description: tool.function.description } : {}),
    input_schema: (tool.function.parameters ?? { type: 'object', properties: {} }) as Anthropic.Tool.InputSchema,
  }));
}

// ---------------------------------------------------------------------------------------------------------------
// Anthropic → ChatMessage.

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
