// The physical limit of this machine for the same rows: the batches the ingest posts (same generator, same sizes),
// inserted straight into the same schema — a fresh set of conversations, then from `connections` PostgreSQL
// connections for `seconds`, one tenant-scoped transaction per batch (infra/db/tenant.ts: the tenant role and
// app.tenant_id, so row-level security and its checks run) holding the product's own batched INSERT of the batch's
// 2 rows (infra/db/messages.ts insertMessageRows: the same rows, whatever the schema becomes). No HTTP, no Temporal,
// no lock on the conversation row, no idempotency lookup: the ceiling a product that only commits each batch could
// reach here. With `perTransaction` > 1, each transaction holds the next that many conversations' batches, whatever
// their tenants (each batch under its own: tenant.ts `tenantSwitch`), one after another: the ceiling for a product
// that commits batches in groups as the gateway does (infra/db/appendGroups.ts).
import { performance } from 'node:perf_hooks';
import { DEFAULT_MAX_GROUP } from '../../infra/db/appendGroups.js';
import { createDb } from '../../infra/db/connect.js';
import { createConversation } from '../../infra/db/conversations.js';
import { insertMessageRows } from '../../infra/db/messageInsert.js';
import { tenantSwitch, withTenant } from '../../infra/db/tenant.js';
import { ConversationScript, type ScriptOptions } from './messages.js';
import type { BenchTenant } from './setup.js';

export const LIMIT_APPLICATION_NAME = 'dc-bench-limit';

/** Batches per transaction of the grouped physical limit: what the gateway's groups hold under load (the most). */
export const GROUPED_LIMIT = DEFAULT_MAX_GROUP;

export interface LimitResult {
  connections: number;
  /** Batches per transaction. */
  perTransaction: number;
  seconds: number;
  messages: number;
  /** Per transaction (BEGIN → COMMIT). */
  latencies: number[];
  errors: number;
  /** The first error's message, if any. */
  firstError: string | null;
}

interface LimitConversation {
  tenantId: string;
  id: string;
  sessionId: string;
  script: ConversationScript;
  position: number;
}

export async function measureLimit(options: {
  databaseUrl: string;
  prefix: string;
  tenants: readonly BenchTenant[];
  conversations: number;
  connections: number;
  seconds: number;
  script: ScriptOptions;
  /** Batches per transaction, tenants mixed (default 1). */
  perTransaction?: number;
}): Promise<LimitResult> {
  const perTransaction = Math.max(1, Math.floor(options.perTransaction ?? 1));
  const db = createDb({
    connectionString: options.databaseUrl,
    maxConnections: options.connections,
    applicationName: LIMIT_APPLICATION_NAME,
  });
  const idle: LimitConversation[] = Array.from(
    { length: Math.max(options.conversations, options.connections * perTransaction) },
    (_, i) => ({
      tenantId: options.tenants[i % options.tenants.length]!.id,
      id: `${options.prefix}-limit-c${i}`,
      sessionId: `${options.prefix}-limit-s${i}`,
      script: new ConversationScript(`${options.prefix}-limit-c${i}`, 1_000_000 + i, options.script),
      position: 0,
    }),
  );
  const result: LimitResult = {
    connections: options.connections,
    perTransaction,
    seconds: 0,
    messages: 0,
    latencies: [],
    errors: 0,
    firstError: null,
  };
  try {
    // The conversations (untimed), as the product creates them.
    let next = 0;
    const creator = async () => {
      while (next < idle.length) {
        const c = idle[next++]!;
        await createConversation(db, c.tenantId, {
          id: c.id,
          sessionId: c.sessionId,
          model: 'default-model',
          provider: null,
          contextLength: 200_000,
          source: 'bench',
          title: null,
        });
      }
    };
    await Promise.all(Array.from({ length: options.connections }, creator));

    // Idle conversations (tenants round-robin, as created): a transaction takes the first `perTransaction`, in
    // (tenant, conversation) order as the gateway's groups take them (no lock here), and puts them back at the end.
    const queue = [...idle];
    const started = performance.now();
    const deadline = started + options.seconds * 1000;
    const writer = async () => {
      while (performance.now() < deadline) {
        const group = queue
          .splice(0, perTransaction)
          .sort((a, b) => a.tenantId.localeCompare(b.tenantId) || a.id.localeCompare(b.id));
        const batches = group.map((conversation) => {
          const batch = conversation.script.next();
          const rows = batch.messages.map((item) => ({
            message: item.message,
            idempotencyKey: item.idempotencyKey,
            position: conversation.position++,
          }));
          const target = { sessionId: conversation.sessionId, conversationId: conversation.id };
          return { tenantId: conversation.tenantId, rows, target };
        });
        const begun = performance.now();
        try {
          await withTenant(db, group[0]!.tenantId, async (tx) => {
            let current = group[0]!.tenantId;
            for (const { tenantId, rows, target } of batches) {
              if (tenantId !== current) await tx.executeQuery(tenantSwitch(tenantId));
              current = tenantId;
              await insertMessageRows(tx, tenantId, target, rows);
            }
          });
          const took = performance.now() - begun;
          for (const { rows } of batches) {
            result.latencies.push(took);
            result.messages += rows.length;
          }
        } catch (err) {
          result.errors += 1;
          result.firstError ??= (err as Error).message;
        } finally {
          queue.push(...group);
        }
      }
    };
    await Promise.all(Array.from({ length: options.connections }, writer));
    result.seconds = (performance.now() - started) / 1000;
  } finally {
    await db.destroy();
  }
  return result;
}
