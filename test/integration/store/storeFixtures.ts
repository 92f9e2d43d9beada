// Shared builders for the session-store tests: a tenant with a session and a transcript, and message shorthands.
import type { Kysely } from 'kysely';
import { SUMMARY_PREFIX } from '../../../engine/constants.js';
import type { ChatMessage, CompressionStats } from '../../../engine/types.js';
import { createCompactionRecord } from '../../../infra/db/compactions.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { createConversation } from '../../../infra/db/conversations.js';
import { loadTranscript, type StoredMessage } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { createSession } from '../../../infra/db/sessions.js';
import { ensureTenant } from '../../../infra/db/tenants.js';

export const user = (content: ChatMessage['content']): ChatMessage => ({ role: 'user', content });
export const assistant = (content: ChatMessage['content']): ChatMessage => ({ role: 'assistant', content });
export const system = (content: string): ChatMessage => ({ role: 'system', content });
export const toolCall = (id: string, name: string, args: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
});
export const toolResult = (id: string, content: string, name?: string): ChatMessage => ({
  role: 'tool',
  content,
  tool_call_id: id,
  ...(name ? { name } : {}),
});
export const summaryText = (body: string): string => `${SUMMARY_PREFIX}\n${body}`;

let counter = 0;
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** A new conversation record of the tenant (which must exist), with its first session; returns its id. */
export async function newConversation(db: Kysely<Database>, tenantId: string): Promise<string> {
  const id = uniqueId('conv');
  await createConversation(db, tenantId, {
    id,
    sessionId: uniqueId('s'),
    model: 'acme-chat',
    provider: null,
    contextLength: 200_000,
    source: 'api',
    title: null,
  });
  return id;
}

export interface SeededSession {
  tenantId: string;
  sessionId: string;
  conversationId: string;
  rows: StoredMessage[];
}

/** A tenant (created if needed), a new session and its transcript appended in order. */
export async function seedSession(
  db: Kysely<Database>,
  tenantId: string,
  messages: readonly ChatMessage[],
  session: { title?: string | null; source?: string; sessionId?: string } = {},
): Promise<SeededSession> {
  await ensureTenant(db, { id: tenantId, name: tenantId });
  const sessionId = session.sessionId ?? uniqueId('s');
  const conversationId = uniqueId('conv');
  await createSession(db, tenantId, {
    id: sessionId,
    conversationId,
    source: session.source ?? 'cli',
    model: 'gpt-test',
    provider: 'openai',
    title: session.title ?? null,
  });
  await appendMessages(
    db,
    tenantId,
    sessionId,
    messages.map((message, i) => ({ message, idempotencyKey: `seed-${i}` })),
  );
  return { tenantId, sessionId, conversationId, rows: await loadTranscript(db, tenantId, sessionId) };
}

export async function newCompaction(
  db: Kysely<Database>,
  seeded: Pick<SeededSession, 'tenantId' | 'sessionId' | 'conversationId'>,
  options: { inPlace?: boolean; seq?: number } = {},
): Promise<string> {
  const id = uniqueId('compact');
  await createCompactionRecord(db, seeded.tenantId, {
    id,
    sessionId: seeded.sessionId,
    conversationId: seeded.conversationId,
    seq: options.seq ?? 1,
    trigger: 'manual',
    inPlace: options.inPlace ?? true,
    focusTopic: null,
    previousSummary: null,
  });
  return id;
}

/** A plausible CompressionStats for a commit. */
export function statsFor(body: string, fallbackUsed = false): CompressionStats {
  return {
    tokensBefore: 1000,
    tokensAfter: 200,
    prunedCount: 0,
    droppedCount: 3,
    fallbackUsed,
    aborted: false,
    noop: false,
    summary: summaryText(body),
  };
}
