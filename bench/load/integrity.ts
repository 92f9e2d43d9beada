// Rows lost / duplicated, counted in the product's database (the owner role: row-level security does not apply to
// the table owner, so every tenant's rows are visible) — or, without SQL access, from each conversation's stored
// messages over HTTP (GET …/messages?archived=true; each message carries its key in a `[bench <key>]` tag).
// Every message whose batch got a 2xx must be stored exactly once, and a conversation's accepted messages must be
// stored in the order they were accepted (row ids and, while no compaction moved them, positions increase).
import type pg from 'pg';
import { createDb } from '../../infra/db/connect.js';
import { listMessages } from '../../infra/db/messages.js';
import type { JsonHttp } from './http.js';
import { tagOf } from './messages.js';
import type { BenchConversation } from './setup.js';
import { BENCH_APPLICATION_NAME } from './stack.js';

export interface IntegrityReport {
  /** Messages whose batch got a 2xx. */
  expected: number;
  lost: number;
  duplicated: number;
  /** Conversations whose accepted messages are not stored in accept order. */
  outOfOrder: number;
  /** Stored messages of this run whose batch never got a 2xx (a failed request that was committed anyway). */
  storedWithoutAccept: number;
  /** Where the rows were counted. */
  source: string;
}

interface StoredRow {
  key: string;
  id: number;
  position: number;
  active: boolean;
}

function compare(
  conversations: readonly BenchConversation[],
  acceptedKeys: ReadonlyMap<string, readonly string[]>,
  stored: ReadonlyMap<string, StoredRow[]>,
  compacting: boolean,
): Omit<IntegrityReport, 'source'> {
  const report = { expected: 0, lost: 0, duplicated: 0, outOfOrder: 0, storedWithoutAccept: 0 };
  for (const conversation of conversations) {
    const keys = acceptedKeys.get(conversation.id) ?? [];
    const rows = [...(stored.get(conversation.id) ?? [])].sort((a, b) => a.id - b.id);
    report.expected += keys.length;
    const count = new Map<string, number>();
    for (const row of rows) count.set(row.key, (count.get(row.key) ?? 0) + 1);
    const accepted = new Set(keys);
    for (const key of keys) {
      const n = count.get(key) ?? 0;
      if (n === 0) report.lost += 1;
      if (n > 1) report.duplicated += n - 1;
    }
    for (const key of count.keys()) if (!accepted.has(key)) report.storedWithoutAccept += 1;
    // Order: the accepted keys as stored (by row id) must be the accept order; positions too while all are active.
    const storedOrder = rows.filter((row) => accepted.has(row.key));
    const inIdOrder = storedOrder.map((row) => row.key);
    const expectedOrder = keys.filter((key) => count.has(key));
    let ordered = inIdOrder.length === expectedOrder.length && inIdOrder.every((key, i) => key === expectedOrder[i]);
    if (ordered && !compacting) {
      for (let i = 1; i < storedOrder.length; i++) {
        if (!(storedOrder[i]!.position > storedOrder[i - 1]!.position)) ordered = false; // NaN: not listed
      }
    }
    if (!ordered) report.outOfOrder += 1;
  }
  return report;
}

/**
 * Counts in PostgreSQL: the rows of this run (keys `<runId>:…`) of the benchmark's conversations, by the columns a
 * message row keeps whatever the schema (conversation, key, id); the positions and states through the product's own
 * read (infra/db/messages.ts listMessages, archived rows included), which follows where they are kept.
 */
export async function countInPostgres(
  db: pg.Pool,
  databaseUrl: string,
  runId: string,
  conversations: readonly BenchConversation[],
  acceptedKeys: ReadonlyMap<string, readonly string[]>,
  compacting: boolean,
): Promise<IntegrityReport> {
  const tenants = [...new Set(conversations.map((c) => c.tenant.id))];
  const ids = conversations.map((c) => c.id);
  const { rows } = await db.query<{ conversation_id: string; idempotency_key: string; id: string }>(
    `SELECT conversation_id, idempotency_key, id FROM messages
      WHERE tenant_id = ANY($1::text[]) AND conversation_id = ANY($2::text[]) AND idempotency_key LIKE $3`,
    [tenants, ids, `${runId}:%`],
  );
  const sessions = await db.query<{ tenant_id: string; id: string }>(
    'SELECT tenant_id, id FROM sessions WHERE tenant_id = ANY($1::text[]) AND conversation_id = ANY($2::text[])',
    [tenants, ids],
  );
  const kysely = createDb({
    connectionString: databaseUrl,
    maxConnections: 4,
    applicationName: BENCH_APPLICATION_NAME,
  });
  const state = new Map<number, { position: number; active: boolean }>();
  try {
    let next = 0;
    const reader = async () => {
      while (next < sessions.rows.length) {
        const session = sessions.rows[next++]!;
        for (const m of await listMessages(kysely, session.tenant_id, session.id, { includeArchived: true })) {
          state.set(m.id, { position: m.position, active: m.active });
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, reader));
  } finally {
    await kysely.destroy();
  }
  const stored = new Map<string, StoredRow[]>();
  for (const row of rows) {
    const list = stored.get(row.conversation_id) ?? [];
    const id = Number(row.id);
    // A row the product's read does not list (neither active nor archived) gets no position: out of order.
    const known = state.get(id) ?? { position: Number.NaN, active: false };
    list.push({ key: row.idempotency_key, id, ...known });
    stored.set(row.conversation_id, list);
  }
  return { ...compare(conversations, acceptedKeys, stored, compacting), source: 'PostgreSQL (owner role)' };
}

/** Counts over HTTP: every stored message (archived included) of each conversation, by its tag. */
export async function countOverHttp(
  http: JsonHttp,
  conversations: readonly BenchConversation[],
  acceptedKeys: ReadonlyMap<string, readonly string[]>,
  compacting: boolean,
): Promise<IntegrityReport> {
  const stored = new Map<string, StoredRow[]>();
  let next = 0;
  const caller = async () => {
    while (next < conversations.length) {
      const conversation = conversations[next++]!;
      const answer = await http.request('GET', `/v1/conversations/${conversation.id}/messages?archived=true`, {
        token: conversation.tenant.key,
        timeoutMs: 60_000,
      });
      if (answer.status !== 200) throw new Error(`messages of ${conversation.id}: ${answer.status}`);
      const list: StoredRow[] = [];
      for (const m of answer.body.messages as { id: number; position: number; active: boolean; message: any }[]) {
        const key = tagOf(m.message?.content);
        if (key) list.push({ key, id: m.id, position: m.position, active: m.active });
      }
      stored.set(conversation.id, list);
    }
  };
  await Promise.all(Array.from({ length: 4 }, caller));
  return { ...compare(conversations, acceptedKeys, stored, compacting), source: 'HTTP (GET …/messages?archived=true)' };
}
