// The idempotency keys a drop-in dialect gave a conversation's messages (issue #12; workers/gateway/dropin/history.ts
// builds them from position and content with historyKey here, which the respond activity also uses for a reply the
// worker stores for a drop-in client, SPEC §15.2): which of a history's keys are stored, how many the dialect stored, and
// the conversation's current and published sessions — one read-only statement. Keys stay on compacted rows, so a client's full
// history still matches after a compaction; only the rows above the conversation's client floor count (those since
// the client's own latest compaction, infra/db/clientCompaction.ts).
import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { ChatMessage, ContentPart } from '../../engine/types.js';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

/** What identifies a message across requests: the fields a model sees, nothing a client adds for itself. */
export function wireOf(message: ChatMessage): unknown {
  const parts = Array.isArray(message.content) ? message.content : null;
  // Text in parts is the same text as a string (a client echoes a reply as blocks that the store keeps as one string).
  const content = !parts
    ? (message.content ?? '')
    : parts.every((part) => part.type === 'text')
      ? parts.map((part) => part.text).join('')
      : parts.map((part: ContentPart) =>
          part.type === 'image_url' ? { image_url: part.image_url.url } : { text: part.text },
        );
  const calls = (message.tool_calls ?? []).map((c) => [c.id, c.function.name, c.function.arguments]);
  return [message.role, content, calls, message.tool_call_id ?? null, message.name ?? null];
}

export const digest = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/**
 * A calendar date (ISO 8601), with its time of day if it has one: what coding agents write into their system prompt
 * or environment block (pi's "Current date:", Codex CLI's `<current_date>`) and rewrite when they start on another
 * day, though the conversation is the same.
 */
const CALENDAR = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?!\d)/g;

/** `wire` (wireOf) with every calendar date in its strings set aside; the same value when it holds none. */
export function undated(wire: unknown): unknown {
  if (typeof wire === 'string') return wire.replace(CALENDAR, '<date>');
  if (Array.isArray(wire)) return wire.map(undated);
  if (wire !== null && typeof wire === 'object') {
    return Object.fromEntries(Object.entries(wire).map(([field, value]) => [field, undated(value)]));
  }
  return wire;
}

/**
 * Idempotency key of the message at `position` of a `dialect`'s history: its place and its wire fields — a system
 * message's without its calendar dates (an agent resumed the next day sends the same system prompt with another
 * date: the same message; a user's or a model's message with another date is another message).
 */
export function historyKey(dialect: string, position: number, message: ChatMessage): string {
  const wire = message.role === 'system' ? undated(wireOf(message)) : wireOf(message);
  return `${dialect}:${position}:${digest(wire).slice(0, 32)}`;
}

export interface StoredHistoryKeys {
  /** The conversation's current session; null when there is no such conversation. */
  sessionId: string | null;
  /** The given keys that are stored in the conversation. */
  present: Set<string>;
  /** How many messages of the conversation carry a key of the dialect. */
  stored: number;
  /** The conversation's client floor (0: the client never compacted it itself). */
  floor: number;
  /** The session of the workflow's published status; null when it never published. */
  publishedSessionId: string | null;
}

export function storedHistoryKeys(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  dialect: string,
  keys: readonly string[],
): Promise<StoredHistoryKeys> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const { rows } = await sql<{ kind: 'session' | 'floor' | 'published' | 'count' | 'key'; value: string }>`
        WITH c AS (
          SELECT current_session_id, client_floor, state->>'sessionId' AS published FROM conversations
           WHERE tenant_id = ${tenantId} AND id = ${conversationId})
        SELECT 'session' AS kind, c.current_session_id AS value FROM c
        UNION ALL
        SELECT 'floor', c.client_floor::text FROM c
        UNION ALL
        SELECT 'published', c.published FROM c WHERE c.published IS NOT NULL
        UNION ALL
        SELECT 'count', count(*)::text FROM messages m, c
         WHERE m.tenant_id = ${tenantId} AND m.conversation_id = ${conversationId} AND m.id > c.client_floor
           AND starts_with(m.idempotency_key, ${`${dialect}:`})
        UNION ALL
        SELECT 'key', m.idempotency_key FROM messages m, c
         WHERE m.tenant_id = ${tenantId} AND m.conversation_id = ${conversationId} AND m.id > c.client_floor
           AND m.idempotency_key = ANY(${keys as string[]}::text[])`.execute(tx);
      return {
        sessionId: rows.find((r) => r.kind === 'session')?.value ?? null,
        present: new Set(rows.filter((r) => r.kind === 'key').map((r) => r.value)),
        stored: Number(rows.find((r) => r.kind === 'count')?.value ?? 0),
        floor: Number(rows.find((r) => r.kind === 'floor')?.value ?? 0),
        publishedSessionId: rows.find((r) => r.kind === 'published')?.value ?? null,
      };
    },
    READ_ONLY,
  );
}
