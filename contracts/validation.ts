// Validation of incoming message batches (pure; used by the client before it stores anything) and of the workflow's
// notifications. Returns a message naming the offending field, or null. Message content itself may hold any text
// (the store keeps it losslessly); keys and numbers must fit what the store holds (issue #9 §1). The HTTP schemas
// (contracts/http/) use the same limits.

import type { Role } from '../engine/types.js';
import type { SubmitMessages } from './conversation.js';
import { isStorableText } from './storableText.js';

/** The roles of a chat message. */
export const MESSAGE_ROLES = ['system', 'user', 'assistant', 'tool'] as const satisfies readonly Role[];
const ROLES: ReadonlySet<string> = new Set(MESSAGE_ROLES);
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
export const MAX_BATCH_MESSAGES = 500;

/** An http(s) URL string (SPEC §2.3 `base_url`; DCTX_URL; a webhook endpoint). */
export const HTTP_URL_PATTERN = /^https?:\/\/[^\s/?#]+(?:[/?#]\S*)?$/i;
/** Token counts are stored in integer columns. */
export const MAX_TOKEN_COUNT = 2_147_483_647;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function contentProblem(content: unknown, at: string): string | null {
  if (content === null || content === undefined || typeof content === 'string') return null;
  if (!Array.isArray(content)) return `${at}.content must be a string, an array of parts or null`;
  for (let i = 0; i < content.length; i++) {
    const part = content[i];
    const p = `${at}.content[${i}]`;
    if (!isObject(part)) return `${p} must be an object`;
    if (part.type === 'text') {
      if (typeof part.text !== 'string') return `${p}.text must be a string`;
    } else if (part.type === 'image_url') {
      if (!isObject(part.image_url) || typeof part.image_url.url !== 'string')
        return `${p}.image_url.url must be a string`;
    } else {
      return `${p}.type must be 'text' or 'image_url'`;
    }
  }
  return null;
}

function toolCallsProblem(calls: unknown, at: string): string | null {
  if (calls === undefined) return null;
  if (!Array.isArray(calls)) return `${at}.tool_calls must be an array`;
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i];
    const p = `${at}.tool_calls[${i}]`;
    if (!isObject(c)) return `${p} must be an object`;
    if (typeof c.id !== 'string' || c.id === '') return `${p}.id must be a non-empty string`;
    if (c.type !== 'function') return `${p}.type must be 'function'`;
    if (!isObject(c.function)) return `${p}.function must be an object`;
    if (typeof c.function.name !== 'string' || c.function.name === '')
      return `${p}.function.name must be a non-empty string`;
    if (typeof c.function.arguments !== 'string') return `${p}.function.arguments must be a JSON string`;
  }
  return null;
}

/** What is wrong with one message in the chat wire shape (SPEC §1.2), naming the field under `at`; null: valid. */
export function chatMessageProblem(m: unknown, at: string): string | null {
  if (!isObject(m)) return `${at} must be an object`;
  if (typeof m.role !== 'string' || !ROLES.has(m.role))
    return `${at}.role must be one of system, user, assistant, tool`;
  if (!('content' in m)) return `${at}.content is required (use null for none)`;
  const problem = contentProblem(m.content, at) ?? toolCallsProblem(m.tool_calls, at);
  if (problem) return problem;
  if (m.tool_calls !== undefined && m.role !== 'assistant')
    return `${at}.tool_calls is only allowed on assistant messages`;
  if (m.role === 'tool' && (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')) {
    return `${at}.tool_call_id is required on tool messages`;
  }
  if (m.name !== undefined && typeof m.name !== 'string') return `${at}.name must be a string`;
  return null;
}

export function validateSubmit(batch: unknown): string | null {
  if (!isObject(batch)) return 'body must be an object';
  const { messages, usage } = batch as Partial<SubmitMessages> & Record<string, unknown>;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages must be a non-empty array';
  if (messages.length > MAX_BATCH_MESSAGES) return `messages must hold at most ${MAX_BATCH_MESSAGES} entries`;
  const keys = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const item = messages[i] as unknown;
    const at = `messages[${i}]`;
    if (!isObject(item)) return `${at} must be an object`;
    const key = item.idempotencyKey;
    if (typeof key !== 'string' || key === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      return `${at}.idempotencyKey must be a non-empty string of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;
    }
    if (!isStorableText(key)) return `${at}.idempotencyKey must be text without NUL characters or unpaired surrogates`;
    if (keys.has(key)) return `${at}.idempotencyKey '${key}' appears twice in the batch`;
    keys.add(key);
    const problem = chatMessageProblem(item.message, `${at}.message`);
    if (problem) return problem;
  }
  if (usage !== undefined) {
    if (!isObject(usage)) return 'usage must be an object';
    for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) {
      const v = usage[k];
      if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_TOKEN_COUNT)) {
        return `usage.${k} must be an integer between 0 and ${MAX_TOKEN_COUNT}`;
      }
    }
  }
  return null;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Guard of the workflow's notification handlers: a StoredBatch the gateway built (content-free counts and ids). */
export function validateStoredBatch(batch: unknown): string | null {
  if (!isObject(batch)) return 'batch must be an object';
  const b = batch as Record<string, unknown>;
  if (b.seq !== null && !isCount(b.seq)) return 'batch.seq must be a count or null';
  for (const key of ['latestSeq', 'version', 'activeMessages', 'activeTokens', 'rows', 'tokens', 'users'] as const) {
    if (!isCount(b[key])) return `batch.${key} must be a non-negative integer`;
  }
  if (typeof b.sessionId !== 'string' || b.sessionId === '') return 'batch.sessionId must be a non-empty string';
  if (b.incoming !== null) {
    if (!isObject(b.incoming)) return 'batch.incoming must be an object or null';
    const incoming = b.incoming as Record<string, unknown>;
    if (!isCount(incoming.rowId) || !isCount(incoming.rows) || !isCount(incoming.tokens)) {
      return 'batch.incoming must hold rowId, rows and tokens';
    }
  }
  if (typeof b.freshAssistant !== 'boolean') return 'batch.freshAssistant must be a boolean';
  if (b.usage !== undefined && !isObject(b.usage)) return 'batch.usage must be an object';
  if (b.turnFollows !== undefined && typeof b.turnFollows !== 'boolean') return 'batch.turnFollows must be a boolean';
  if (b.readVersion !== undefined && !isCount(b.readVersion)) return 'batch.readVersion must be a non-negative integer';
  if (b.turn !== undefined && !isTurnUsage(b.turn)) return 'batch.turn must hold the six token counts of a turn';
  if (b.notification !== undefined) return validateNotificationFold(b.notification, 'batch.notification');
  return null;
}

/** A client compaction the gateway committed (contracts/conversation.ts ClientCompaction). */
export function validateClientCompaction(value: unknown): string | null {
  if (!isObject(value)) return 'the client compaction must be an object';
  const c = value as Record<string, unknown>;
  for (const key of ['compactionId', 'sessionId'] as const) {
    if (typeof c[key] !== 'string' || c[key] === '') return `${key} must be a non-empty string`;
  }
  for (const key of ['version', 'activeMessages', 'activeTokens'] as const) {
    if (!isCount(c[key])) return `${key} must be a non-negative integer`;
  }
  return null;
}

/** The fold a notification carries (contracts/conversationLog.ts NotificationFold). */
export function validateNotificationFold(value: unknown, at: string): string | null {
  if (!isObject(value)) return `${at} must be an object`;
  const n = value as Record<string, unknown>;
  if (!isCount(n.epoch)) return `${at}.epoch must be a non-negative integer`;
  if (n.quiet === null) return null;
  if (!isObject(n.quiet)) return `${at}.quiet must be an object or null`;
  const q = n.quiet as Record<string, unknown>;
  for (const key of ['fromSeq', 'toSeq', 'batches', 'users', 'version', 'activeMessages', 'activeTokens'] as const) {
    if (!isCount(q[key])) return `${at}.quiet.${key} must be a non-negative integer`;
  }
  if (typeof q.freshAssistant !== 'boolean') return `${at}.quiet.freshAssistant must be a boolean`;
  if (q.usage !== null && !isObject(q.usage)) return `${at}.quiet.usage must be an object or null`;
  if (typeof q.usageVersion !== 'number' || typeof q.readingBaseTokens !== 'number') {
    return `${at}.quiet must hold usageVersion and readingBaseTokens`;
  }
  if (q.turns !== undefined) {
    const t = q.turns as Record<string, unknown>;
    const counts = ['turns', 'cacheReadTokens', 'cacheWriteTokens', 'uncachedInputTokens'] as const;
    if (!isObject(t) || counts.some((key) => !isCount(t[key])) || !isTurnUsage(t.lastTurn)) {
      return `${at}.quiet.turns must hold ${counts.join(', ')} and lastTurn`;
    }
  }
  return null;
}

const TURN_USAGE_KEYS = [
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'uncached_input_tokens',
] as const;

function isTurnUsage(value: unknown): boolean {
  return isObject(value) && TURN_USAGE_KEYS.every((key) => isCount((value as Record<string, unknown>)[key]));
}
