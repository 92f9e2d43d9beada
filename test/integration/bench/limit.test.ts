// bench:load's physical limit (bench/load/limit.ts) on real PostgreSQL: the ceiling it prints must be rows the schema
// really stored, under row-level security. A batch per transaction, and the grouped ceiling whose transactions mix
// tenants as the gateway's groups do (tenant.ts `tenantSwitch`): every batch stored whole, as its own tenant, in
// order, several tenants' batches in one transaction, no error.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { measureLimit } from '../../../bench/load/limit.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;
const tenants = ['limit-a', 'limit-b', 'limit-c'].map((id) => ({ id, key: 'unused' }));

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  for (const { id } of tenants) await ensureTenant(testDb.db, { id, name: id });
});
afterAll(async () => {
  await testDb?.drop();
});

interface Row {
  xmin: string;
  tenant_id: string;
  conversation_id: string;
  position: number;
}

/** The rows the run stored, with the transaction that stored each and its position. */
async function storedRows(prefix: string): Promise<Row[]> {
  const { rows } = await sql<Row>`
    SELECT m.xmin::text AS xmin, m.tenant_id, m.conversation_id, s.position
      FROM messages m JOIN message_state s ON s.tenant_id = m.tenant_id AND s.message_id = m.id
     WHERE m.conversation_id LIKE ${`${prefix}-%`} ORDER BY m.id`.execute(testDb.db);
  return rows;
}

const run = (prefix: string, perTransaction: number) =>
  measureLimit({
    databaseUrl: testDb.url,
    prefix,
    tenants,
    conversations: 12,
    connections: 2,
    seconds: 0.5,
    script: { runId: prefix, thresholdTokens: 0, compact: false },
    perTransaction,
  });

describe('the physical limit of bench:load', () => {
  it.each([1, 4])('%i batch(es) per transaction: what it counts is stored, each row as its tenant', async (per) => {
    const prefix = `lim${per}`;
    const result = await run(prefix, per);
    expect(result).toMatchObject({ errors: 0, firstError: null, perTransaction: per });
    expect(result.messages).toBeGreaterThan(0);
    const rows = await storedRows(prefix);
    expect(rows).toHaveLength(result.messages);
    // Conversation i belongs to tenant i % 3 (created round-robin), and its positions run 0, 1, 2, … in id order.
    for (const row of rows) {
      const index = Number(row.conversation_id.split('-c').at(-1));
      expect(row.tenant_id).toBe(tenants[index % tenants.length]!.id);
    }
    const byConversation = new Map<string, number[]>();
    for (const row of rows)
      byConversation.set(row.conversation_id, [...(byConversation.get(row.conversation_id) ?? []), row.position]);
    for (const positions of byConversation.values()) expect(positions).toEqual(positions.map((_, i) => i));
    // Which transactions held which tenants: one each alone; grouped, several tenants share one.
    const tenantsOf = new Map<string, Set<string>>();
    for (const row of rows) tenantsOf.set(row.xmin, (tenantsOf.get(row.xmin) ?? new Set()).add(row.tenant_id));
    const widest = Math.max(...[...tenantsOf.values()].map((set) => set.size));
    expect(widest).toBe(per === 1 ? 1 : tenants.length);
  });
});
