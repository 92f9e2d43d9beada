// The identity of a message for the in-place commit's deep-equality match (SPEC §13.2): its wire fields (SPEC §1.2)
// as stored, and the runtime properties beside them. Pure.
import type { ChatMessage, ContentPart } from '../types.js';

/** Message properties that are wire fields, or never stored (`cache_control`: only the caching helper sets it, §12). */
export const WIRE_FIELDS: ReadonlySet<string> = new Set([
  'role',
  'content',
  'tool_calls',
  'tool_call_id',
  'name',
  'cache_control',
]);

/** A content part as stored: without its `cache_control` marker. */
export function withoutCacheControl(part: ContentPart): ContentPart {
  if (!('cache_control' in part)) return part;
  const { cache_control: _dropped, ...rest } = part;
  return rest as ContentPart;
}

/** The content as stored: a string, the parts without markers, or null (also for a missing content, SPEC §18.13). */
export function storedContent(content: ChatMessage['content'] | undefined): string | ContentPart[] | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(withoutCacheControl);
  if (content === null || content === undefined) return null;
  throw new TypeError(`message content must be a string, an array of parts or null, got ${typeof content}`);
}

/** The message's properties that are not wire fields (reasoning, provider extras …), or null when it has none. */
export function runtimeProperties(message: ChatMessage): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const [key, value] of Object.entries(message)) {
    if (value === undefined || WIRE_FIELDS.has(key)) continue;
    extra ??= {};
    extra[key] = value;
  }
  return extra;
}

/** JSON with object keys sorted and undefined properties omitted: equal values give equal strings. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * Canonical string over the wire fields (role, content, tool_calls, tool_call_id, name; SPEC §1.2) of the message as
 * stored: two messages are deep-equal on the wire fields exactly when their keys are equal.
 */
export function wireKey(message: ChatMessage): string {
  return canonicalJson([
    message.role,
    storedContent(message.content),
    message.tool_calls ?? null,
    message.tool_call_id ?? null,
    message.name ?? null,
  ]);
}

/**
 * A cheap summary of the wire fields: messages with equal `wireKey`s have equal shapes (not the converse), so a row
 * whose shape no output message has cannot be carried and needs no key.
 */
export function wireShape(message: ChatMessage): string {
  const content = message.content;
  const body = typeof content === 'string' ? `s${content.length}` : Array.isArray(content) ? `a${content.length}` : 'n';
  const calls = message.tool_calls;
  const callCount = calls === undefined || calls === null ? '-' : Array.isArray(calls) ? String(calls.length) : 'o';
  return `${message.role}|${body}|${callCount}|${String(message.tool_call_id ?? '')}|${String(message.name ?? '')}`;
}
