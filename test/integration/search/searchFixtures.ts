// Seeding for the search tests: sessions appended through the store (appendMessages), then row flags and timestamps
// set by the owner, so each test controls visibility and (timestamp, id) order.
import { type Kysely, sql } from 'kysely';
import type { ChatMessage } from '../../../engine/types.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import type { Database } from '../../../infra/db/schema.js';
import { createSession } from '../../../infra/db/sessions.js';
import { ensureTenant } from '../../../infra/db/tenants.js';

export const user = (content: ChatMessage['content']): ChatMessage => ({ role: 'user', content });
export const assistant = (content: ChatMessage['content']): ChatMessage => ({ role: 'assistant', content });
export const toolCall = (id: string, name: string, args: string, content: string | null = null): ChatMessage => ({
  role: 'assistant',
  content,
  tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
});
export const toolResult = (id: string, content: string, name: string): ChatMessage => ({
  role: 'tool',
  content,
  tool_call_id: id,
  name,
});

export interface RowSpec {
  message: ChatMessage;
  active?: boolean;
  compacted?: boolean;
  /** Explicit timestamp; by default every seeded row is one second after the previous one (over all seeds). */
  timestamp?: Date;
}

export interface SessionSpec {
  source?: string;
  model?: string | null;
  rows: ReadonlyArray<ChatMessage | RowSpec>;
}

let clock = Date.parse('2025-01-01T00:00:00Z');
let sessionCounter = 0;

export function nextTimestamp(): Date {
  clock += 1000;
  return new Date(clock);
}

function isRowSpec(row: ChatMessage | RowSpec): row is RowSpec {
  return 'message' in row;
}

/** Creates the tenant (if needed) and a session holding the rows; returns the session id and the row ids. */
export async function seedSession(
  db: Kysely<Database>,
  tenantId: string,
  spec: SessionSpec,
): Promise<{ sessionId: string; ids: number[] }> {
  await ensureTenant(db, { id: tenantId, name: tenantId });
  sessionCounter += 1;
  const sessionId = `s-${sessionCounter}`;
  await createSession(db, tenantId, {
    id: sessionId,
    conversationId: `conv-${sessionCounter}`,
    source: spec.source ?? 'cli',
    model: spec.model === undefined ? 'gpt-test' : spec.model,
  });
  const rows = spec.rows.map((row) => (isRowSpec(row) ? row : { message: row }));
  const { appended } = await appendMessages(
    db,
    tenantId,
    sessionId,
    rows.map((row, i) => ({ message: row.message, idempotencyKey: `k-${i}` })),
  );
  const ids = appended.map((a) => a.id);
  await sql`
    WITH u AS (
      SELECT * FROM unnest(${ids}::bigint[], ${rows.map((r) => (r.timestamp ?? nextTimestamp()).toISOString())}::timestamptz[],
                           ${rows.map((r) => r.active ?? true)}::boolean[], ${rows.map((r) => r.compacted ?? false)}::boolean[])
             AS u(id, ts, active, compacted)),
    state AS (
      UPDATE message_state AS s SET active = u.active, compacted = u.compacted FROM u WHERE s.message_id = u.id)
    UPDATE messages AS m SET "timestamp" = u.ts FROM u WHERE m.id = u.id`.execute(db);
  return { sessionId, ids };
}
