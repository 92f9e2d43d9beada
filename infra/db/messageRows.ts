// Lossless mapping between a ChatMessage (SPEC §1.2) and the message columns of a `messages` row (SPEC §13.1)
// (the wire fields' canonical key, engine/commit/messageKeys.ts, is what the in-place commit matches, SPEC §13.2).
//
// Columns: string content → `content`; array content → `content_parts`; null (or missing, §18.13) → both null;
// `tool_calls`, `tool_call_id`; `name` → `tool_name` on tool rows, else kept in `extra`; every other runtime
// property → `extra`. `cache_control` (on the message or on a content part) is never stored: only the caching
// helper sets it, at request time (§12).
//
// A message holding characters PostgreSQL cannot store (NUL, unpaired surrogates: contracts/storableText.ts) is kept
// exactly as JSON text in `raw_message` (JSON escapes them as `\u0000`, `\ud800`), and its columns hold a copy with
// U+FFFD in their place, for search and SQL; reading the row returns the raw message (issue #9 §1: such content
// round-trips, it never wedges a write).
import { hasUnstorableText, toStorableJson } from '../../contracts/storableText.js';
import { runtimeProperties, storedContent, WIRE_FIELDS } from '../../engine/commit/messageKeys.js';
import type { ChatMessage, ContentPart, Role, ToolCall } from '../../engine/types.js';

/** The message columns of a row, JSON values parsed (as pg returns jsonb). */
export interface MessageFields {
  role: Role;
  content: string | null;
  content_parts: ContentPart[] | null;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  extra: Record<string, unknown> | null;
  /** The exact stored message as JSON when the columns above hold a sanitised copy; else null. */
  raw_message: string | null;
}

function contentColumns(content: ChatMessage['content'] | undefined): Pick<MessageFields, 'content' | 'content_parts'> {
  const stored = storedContent(content);
  return typeof stored === 'string'
    ? { content: stored, content_parts: null }
    : { content: null, content_parts: stored };
}

/** `extra`: the runtime properties, and `name` on non-tool rows (tool rows keep it in `tool_name`). */
function extraProperties(message: ChatMessage): Record<string, unknown> | null {
  const extra = runtimeProperties(message);
  if (message.role === 'tool' || message.name === undefined) return extra;
  return { ...extra, name: message.name };
}

function columnsOf(message: ChatMessage): Omit<MessageFields, 'raw_message'> {
  return {
    role: message.role,
    ...contentColumns(message.content),
    tool_calls: message.tool_calls ?? null,
    tool_call_id: message.tool_call_id ?? null,
    tool_name: message.role === 'tool' ? (message.name ?? null) : null,
    extra: extraProperties(message),
  };
}

export function messageToFields(message: ChatMessage): MessageFields {
  const columns = columnsOf(message);
  if (!hasUnstorableText(columns)) return { ...columns, raw_message: null };
  // The exact message as it reads back (cache_control dropped, missing content → null), then a storable copy.
  const exact = columnsToMessage(columns);
  return { ...columnsOf(toStorableJson(exact)), raw_message: JSON.stringify(exact) };
}

/** The columns a message is stored in (select them to read it back with `fieldsToMessage`). */
export const MESSAGE_COLUMNS = [
  'role',
  'content',
  'content_parts',
  'tool_calls',
  'tool_call_id',
  'tool_name',
  'extra',
  'raw_message',
] as const;

/** The row shape `fieldsToMessage` reads (jsonb columns as pg returns them). */
export interface MessageColumns {
  role: Role;
  content: string | null;
  content_parts: unknown[] | null;
  tool_calls: unknown[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  extra: Record<string, unknown> | null;
  raw_message?: string | null;
}

export function fieldsToMessage(row: MessageColumns): ChatMessage {
  if (typeof row.raw_message === 'string') return JSON.parse(row.raw_message) as ChatMessage;
  return columnsToMessage(row);
}

function columnsToMessage(row: Omit<MessageColumns, 'raw_message'>): ChatMessage {
  const message: ChatMessage & Record<string, unknown> = {
    role: row.role,
    content: (row.content_parts as ContentPart[] | null) ?? row.content,
  };
  if (row.tool_calls !== null) message.tool_calls = row.tool_calls as ToolCall[];
  if (row.tool_call_id !== null) message.tool_call_id = row.tool_call_id;
  if (row.tool_name !== null) message.name = row.tool_name;
  if (row.extra !== null) {
    for (const [key, value] of Object.entries(row.extra)) {
      if (key === 'name') message.name ??= value as string;
      else if (!WIRE_FIELDS.has(key)) message[key] = value;
    }
  }
  return message;
}

/**
 * The message a row reads back as, given the message it read back as earlier and its `extra` column now: the wire
 * columns and `raw_message` of a row never change after the insert (only `extra`, `summary_body`, `pinned` and the
 * row's session do), so this is `fieldsToMessage` of the row without reading its content again.
 */
export function withStoredExtra(
  earlier: ChatMessage,
  extra: Record<string, unknown> | null,
  hasRawMessage: boolean,
): ChatMessage {
  // A raw row reads back as its raw JSON, whatever `extra` holds.
  return hasRawMessage ? earlier : columnsToMessage({ ...columnsOf(earlier), extra });
}

/** The message as it reads back after storing it (cache_control dropped, missing content → null). */
export function toStoredMessage(message: ChatMessage): ChatMessage {
  return fieldsToMessage(messageToFields(message));
}
