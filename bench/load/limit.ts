// The physical limit of this machine for the same rows: the batches the ingest posts (same generator, same sizes),
// inserted straight into the same schema — a fresh set of conversations and sessions, then from `connections`
// PostgreSQL connections for `seconds`, one transaction per batch in the shape of infra/db/tenant.ts (the tenant
// role and app.tenant_id set for the transaction, so row-level security and its checks run) holding one INSERT
// of the batch's 2 rows into `messages` with the columns the product writes. No HTTP, no Temporal, no locks on the
// conversation row: the ceiling a product that only commits each batch could reach here.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { estimateMessageTokensRough } from '../../engine/tokens.js';
import { ConversationScript, type ScriptOptions } from './messages.js';
import type { BenchTenant } from './setup.js';

export const LIMIT_APPLICATION_NAME = 'dc-bench-limit';

export interface LimitResult {
  connections: number;
  seconds: number;
  messages: number;
  /** Per transaction (BEGIN → COMMIT). */
  latencies: number[];
  errors: number;
}

interface LimitConversation {
  tenantId: string;
  id: string;
  sessionId: string;
  script: ConversationScript;
  position: number;
}

const INSERT = `INSERT INTO messages (tenant_id, session_id, conversation_id, role, content, position, idempotency_key,
                                      token_estimate)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8), ($1, $2, $3, $9, $10, $11, $12, $13)`;

/** Fresh conversations and their sessions for the limit run, in one statement each (untimed). */
async function createConversations(
  db: pg.Pool,
  prefix: string,
  tenants: readonly BenchTenant[],
  count: number,
  script: ScriptOptions,
): Promise<LimitConversation[]> {
  const list: LimitConversation[] = Array.from({ length: count }, (_, i) => ({
    tenantId: tenants[i % tenants.length]!.id,
    id: `${prefix}-limit-c${i}`,
    sessionId: `${prefix}-limit-s${i}`,
    script: new ConversationScript(`${prefix}-limit-c${i}`, 1_000_000 + i, script),
    position: 0,
  }));
  const columns = [list.map((c) => c.tenantId), list.map((c) => c.sessionId), list.map((c) => c.id)];
  await db.query(
    `INSERT INTO sessions (tenant_id, id, conversation_id, model)
     SELECT t, s, c, 'default-model' FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, s, c)`,
    columns,
  );
  await db.query(
    `INSERT INTO conversations (tenant_id, id, current_session_id, model, context_length)
     SELECT t, c, s, 'default-model', 200000 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, s, c)`,
    columns,
  );
  return list;
}

export async function measureLimit(options: {
  db: pg.Pool;
  databaseUrl: string;
  prefix: string;
  tenants: readonly BenchTenant[];
  conversations: number;
  connections: number;
  seconds: number;
  script: ScriptOptions;
}): Promise<LimitResult> {
  const idle = await createConversations(
    options.db,
    options.prefix,
    options.tenants,
    Math.max(options.conversations, options.connections),
    options.script,
  );
  const clients = await Promise.all(
    Array.from({ length: options.connections }, async () => {
      const client = new pg.Client({ connectionString: options.databaseUrl, application_name: LIMIT_APPLICATION_NAME });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    }),
  );
  const result: LimitResult = {
    connections: options.connections,
    seconds: 0,
    messages: 0,
    latencies: [],
    errors: 0,
  };
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  const writer = async (client: pg.Client) => {
    while (performance.now() < deadline) {
      const conversation = idle.shift()!;
      const batch = conversation.script.next();
      const [user, assistant] = batch.messages;
      const row = (item: typeof user) => [
        item!.message.role,
        item!.message.content,
        conversation.position++,
        item!.idempotencyKey,
        estimateMessageTokensRough(item!.message),
      ];
      const begun = performance.now();
      try {
        await client.query('BEGIN');
        await client.query("SELECT set_config('role', 'dc_tenant', true), set_config('app.tenant_id', $1, true)", [
          conversation.tenantId,
        ]);
        await client.query(INSERT, [
          conversation.tenantId,
          conversation.sessionId,
          conversation.id,
          ...row(user),
          ...row(assistant),
        ]);
        await client.query('COMMIT');
        result.latencies.push(performance.now() - begun);
        result.messages += batch.messages.length;
      } catch {
        result.errors += 1;
        await client.query('ROLLBACK').catch(() => undefined);
      } finally {
        idle.push(conversation);
      }
    }
  };
  await Promise.all(clients.map(writer));
  result.seconds = (performance.now() - started) / 1000;
  await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  return result;
}
