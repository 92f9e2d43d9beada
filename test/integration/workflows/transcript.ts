// Builders of incoming message batches and checks of stored transcripts for the workflow tests.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { IncomingMessage, SubmitMessages } from '../../../contracts/conversation.js';
import { type ChatMessage, messageText, SUMMARY_PREFIX, SYSTEM_NOTE } from '../../../engine/index.js';
import { selectWithState } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant, setTenantPolicy } from '../../../infra/db/tenants.js';

export function keyed(messages: ChatMessage[], prefix: string = randomUUID()): IncomingMessage[] {
  return messages.map((message, i) => ({ message, idempotencyKey: `${prefix}:${i}` }));
}

/** A coding-agent style exchange: system prompt, then rounds of user → assistant(tool call) → tool → assistant. */
export function agentTranscript(
  rounds: number,
  options: { toolOutputChars?: number; tag?: string } = {},
): ChatMessage[] {
  const tag = options.tag ?? 'round';
  const out: ChatMessage[] = [{ role: 'system', content: 'You are a careful coding agent.' }];
  for (let r = 0; r < rounds; r++) {
    const id = `call_${r}_${randomUUID().slice(0, 8)}`;
    out.push({ role: 'user', content: `${tag} ${r}: please inspect src/module_${r}.ts and fix the failing test` });
    out.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id,
          type: 'function',
          function: { name: 'read_file', arguments: JSON.stringify({ path: `src/module_${r}.ts` }) },
        },
      ],
    });
    out.push({
      role: 'tool',
      tool_call_id: id,
      name: 'read_file',
      content: `export const value${r} = ${r};\n${'// filler line of source code\n'.repeat(Math.ceil((options.toolOutputChars ?? 600) / 30))}`,
    });
    out.push({ role: 'assistant', content: `${tag} ${r} done: the test in src/module_${r}.ts passes now.` });
  }
  return out;
}

export function batch(messages: ChatMessage[], usage?: SubmitMessages['usage']): SubmitMessages {
  return usage ? { messages: keyed(messages), usage } : { messages: keyed(messages) };
}

export interface StoredRow {
  id: number;
  session_id: string;
  role: string;
  content: string | null;
  active: boolean;
  compacted: boolean;
  position: number;
  summary_body: string | null;
}

const STORED_ROW_COLUMNS = [
  'm.id',
  's.session_id',
  'm.role',
  'm.content',
  's.active',
  's.compacted',
  's.position',
  'm.summary_body',
] as const;

export async function allRows(db: Kysely<Database>, tenantId: string): Promise<StoredRow[]> {
  return withTenant(db, tenantId, (tx) =>
    selectWithState(tx, tenantId).select(STORED_ROW_COLUMNS).orderBy('m.id').execute(),
  );
}

export async function activeTranscript(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<StoredRow[]> {
  return withTenant(db, tenantId, (tx) =>
    selectWithState(tx, tenantId)
      .select(STORED_ROW_COLUMNS)
      .where('s.session_id', '=', sessionId)
      .where('s.active', '=', true)
      .orderBy('s.position')
      .execute(),
  );
}

export async function compactionsOf(db: Kysely<Database>, tenantId: string) {
  return withTenant(db, tenantId, (tx) => tx.selectFrom('compactions').selectAll().orderBy('created_at').execute());
}

/** The tenant's SPEC §13.5 `session:compress` events (the feed's other events, migrations/0021, left out). */
export async function eventsOf(db: Kysely<Database>, tenantId: string) {
  return withTenant(db, tenantId, (tx) =>
    tx.selectFrom('events').selectAll().where('type', '=', 'session:compress').orderBy('id').execute(),
  );
}

export async function searchArchived(db: Kysely<Database>, tenantId: string, needle: string) {
  return withTenant(
    db,
    tenantId,
    async (tx) =>
      (
        await sql<{ id: number; active: boolean; compacted: boolean }>`
        SELECT m.id, s.active, s.compacted FROM messages m JOIN message_state s ON s.message_id = m.id
        WHERE (s.active OR s.compacted) AND m.indexed_text ILIKE ${`%${needle}%`}`.execute(tx)
      ).rows,
  );
}

/**
 * Invariants of a compacted transcript (SPEC §8.9, §13.2): positions 0..n-1 without gaps, the system note exactly
 * once, exactly one summary row, every tool row answered by a call, every call answered, no live duplicates of a row.
 */
export function expectTranscriptInvariants(rows: StoredRow[], messages: ChatMessage[]): void {
  expect(rows.map((r) => r.position)).toEqual(rows.map((_, i) => i));
  const texts = messages.map((m) => messageText(m));
  expect(texts.filter((t) => t.includes(SYSTEM_NOTE))).toHaveLength(texts[0]?.includes(SYSTEM_NOTE) ? 1 : 0);
  expect(texts.filter((t) => t.trimStart().startsWith(SUMMARY_PREFIX))).toHaveLength(1);
  expect(rows.filter((r) => r.summary_body !== null)).toHaveLength(1);
  const calls = new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
  const results = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  for (const r of results) expect(calls.has(r as string)).toBe(true);
  const last = messages[messages.length - 1];
  for (const m of messages) {
    if (m === last) continue;
    for (const c of m.tool_calls ?? []) expect(results.has(c.id)).toBe(true);
  }
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
}

/** A fresh tenant with a unique id, optionally with a compression policy (SPEC §2.2 keys, snake_case). */
export async function newTenant(db: Kysely<Database>, policy: Record<string, unknown> = {}): Promise<string> {
  const id = `t-${randomUUID().slice(0, 8)}`;
  await ensureTenant(db, { id, name: id });
  if (Object.keys(policy).length) await setTenantPolicy(db, id, policy);
  return id;
}
