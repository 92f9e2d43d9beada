// Validation of incoming message batches (pure; used by the client before it signals and by the workflow as a
// guard). Returns a message naming the offending field, or null.
import type { SubmitMessages } from './definitions.js';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
export const MAX_BATCH_MESSAGES = 500;

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
    if (keys.has(key)) return `${at}.idempotencyKey '${key}' appears twice in the batch`;
    keys.add(key);
    const m = item.message;
    const mp = `${at}.message`;
    if (!isObject(m)) return `${mp} must be an object`;
    if (typeof m.role !== 'string' || !ROLES.has(m.role))
      return `${mp}.role must be one of system, user, assistant, tool`;
    if (!('content' in m)) return `${mp}.content is required (use null for none)`;
    const problem = contentProblem(m.content, mp) ?? toolCallsProblem(m.tool_calls, mp);
    if (problem) return problem;
    if (m.tool_calls !== undefined && m.role !== 'assistant')
      return `${mp}.tool_calls is only allowed on assistant messages`;
    if (m.role === 'tool' && (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')) {
      return `${mp}.tool_call_id is required on tool messages`;
    }
    if (m.name !== undefined && typeof m.name !== 'string') return `${mp}.name must be a string`;
  }
  if (usage !== undefined) {
    if (!isObject(usage)) return 'usage must be an object';
    for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) {
      const v = usage[k];
      if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) {
        return `usage.${k} must be a non-negative number`;
      }
    }
  }
  return null;
}
