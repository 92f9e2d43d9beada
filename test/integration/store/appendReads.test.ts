// What an append reads (infra/db/conversationAppend.ts, issue #11 §1): the session's highest position is one entry of
// the transcript index, however many active rows the tenant's other conversations hold. Counted with PostgreSQL's
// per-transaction statistics of message_state (rows and index entries returned), inside the append's own
// transaction: on a connection whose plans were made while the table was nearly empty and never analysed, and on one
// whose plans were made once it was analysed (a generic plan made on those statistics read the whole table).
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { appendToConversation } from '../../../infra/db/conversationAppend.js';
import type { Database } from '../../../infra/db/schema.js';
import type { TenantTx } from '../../../infra/db/tenant.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, newConversation, seedSession, uniqueId, user } from './storeFixtures.js';

let testDb: TestDatabase;
const T = 'append-reads';
const OTHER_ROWS = 600;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await ensureTenant(testDb.db, { id: T, name: T });
});
afterAll(async () => {
  await testDb?.drop();
});

/** Rows and index entries message_state returned so far in this transaction. */
async function stateReads(tx: TenantTx): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT sum(pg_stat_get_xact_tuples_returned(oid))::text AS n
      FROM (SELECT 'message_state'::regclass::oid AS oid
            UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = 'message_state'::regclass) AS rels`.execute(tx);
  return Number(rows[0]?.n ?? 0);
}

/** Appends one batch to the conversation on `db`; what message_state returned during it, and its positions. */
async function appendCounted(db: Kysely<Database>, conversationId: string, key: string) {
  let reads = Number.NaN;
  const result = await appendToConversation(
    db,
    T,
    conversationId,
    [
      { message: user(`question ${key}`), idempotencyKey: `${key}-q` },
      { message: assistant(`answer ${key}`), idempotencyKey: `${key}-a` },
    ],
    {
      within: async (tx) => {
        reads = await stateReads(tx);
      },
    },
  );
  return { reads, positions: result.appended.map((m) => m.position) };
}

describe("an append's reads of message_state", () => {
  it('do not grow with the active rows of the tenant’s other conversations', async () => {
    const early = createDb({ connectionString: testDb.url, maxConnections: 1 });
    const late = createDb({ connectionString: testDb.url, maxConnections: 1 });
    try {
      const mine = await newConversation(testDb.db, T);
      const first = await appendCounted(early, mine, uniqueId('early'));
      expect(first.positions).toEqual([0, 1]);
      let last = 1;
      const appendTwice = async (db: Kysely<Database>, name: string) => {
        for (let i = 0; i < 2; i++) {
          const { reads, positions } = await appendCounted(db, mine, uniqueId(name));
          // The highest position is one index entry; nothing else of message_state is read by the append.
          expect(reads, name).toBeLessThanOrEqual(2);
          expect(positions).toEqual([last + 1, last + 2]);
          last += 2;
        }
      };

      // The tenant's other conversations: many active rows, no statistics yet.
      for (let s = 0; s < 6; s++) {
        const messages = Array.from({ length: OTHER_ROWS / 6 }, (_, i) => user(`other ${s}.${i}`));
        await seedSession(testDb.db, T, messages);
      }
      await appendTwice(early, 'planned before the rows came');

      // Statistics as autovacuum would gather them, then a connection that plans on them.
      await sql`VACUUM ANALYZE message_state`.execute(testDb.db);
      await appendTwice(late, 'planned on analysed statistics');
    } finally {
      await early.destroy();
      await late.destroy();
    }
  });
});
