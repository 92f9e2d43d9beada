// Conversion between the internal OpenAI-shaped `ChatMessage[]` (SPEC §1.2) and Anthropic's Messages API.
//
// toAnthropicRequest: system messages → the `system` parameter (a string, or text blocks keeping cache_control);
// user / assistant content strings and parts → strings and blocks (image_url: `data:` URLs → base64 sources, other
// URLs → url sources); assistant tool_calls → tool_use blocks (the JSON `arguments` string → the `input` object);
// tool rows → user messages of tool_result blocks, consecutive rows merged into one message as Anthropic requires;
// every cache_control (SPEC §12.2) moves to the block that stands for the marked part or message.
//
// fromAnthropicRequest (fromAnthropic.ts) is its inverse. A round trip gives back the same list — equal `role`, `content`,
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
// The other direction, Anthropic → ChatMessage, is fromAnthropic.ts.
import type Anthropic from '@anthropic-ai/sdk';
import type { CacheControl, ChatMessage, ContentPart, ToolCall } from '../../engine/types.js';
import type { ChatTool } from './types.js';

export type TextBlock = Anthropic.TextBlockParam;
export type ImageBlock = Anthropic.ImageBlockParam;
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

export function toolResultBlock(row: ChatMessage): ToolResultBlock {
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

/** One entry of the request's `messages`: a message as it stands, or a run of tool rows as one user message. */
export type RequestUnit = { message: ChatMessage } | { results: ChatMessage[] };

/** The system messages that become `system`, and what each entry of `messages` is made of (rules 2 and 3). */
export function requestUnits(
  messages: readonly ChatMessage[],
  options: AnthropicRequestOptions = {},
): { systems: ChatMessage[]; units: RequestUnit[] } {
  const leading = messages.findIndex((m) => m.role !== 'system');
  const hoisted = (i: number) => !options.systemInPlace || leading === -1 || i < leading;
  const systems = messages.filter((m, i) => m.role === 'system' && hoisted(i));
  const units: RequestUnit[] = [];
  let pendingResults: ChatMessage[] | null = null;
  for (const [i, message] of messages.entries()) {
    if (message.role === 'system') {
      if (!hoisted(i)) {
        pendingResults = null;
        units.push({ message });
      }
      continue;
    }
    if (message.role === 'tool') {
      if (!pendingResults) {
        pendingResults = [];
        units.push({ results: pendingResults });
      }
      pendingResults.push(message);
      continue;
    }
    pendingResults = null;
    units.push({ message });
  }
  return { systems, units };
}

/** The `messages` entry of a unit that is one message (a system message here is one that stays in place). */
export function messageParam(message: ChatMessage): Anthropic.MessageParam {
  if (message.role === 'system') return inPlaceSystem(message);
  if (message.role === 'assistant') return { role: 'assistant', content: assistantContent(message) };
  return { role: 'user', content: userContent(message) };
}

/** The request's `system` and `messages` for a ChatMessage list. Never mutates its input. */
export function toAnthropicRequest(
  messages: readonly ChatMessage[],
  options: AnthropicRequestOptions = {},
): AnthropicRequestMessages {
  const { systems, units } = requestUnits(messages, options);
  const out = units.map(
    (unit): Anthropic.MessageParam =>
      'message' in unit ? messageParam(unit.message) : { role: 'user', content: unit.results.map(toolResultBlock) },
  );
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
