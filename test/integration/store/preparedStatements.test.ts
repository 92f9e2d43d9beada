// Named prepared statements (infra/db/preparedStatements.ts) on the real server: a statement run again is parsed once
// per connection; row-level security still applies the tenant of each transaction to a reused statement, planned for
// its values each time; statements without parameters are never prepared; and a schema change under a prepared
// `SELECT *` fails one attempt as retryable, after which the statement is parsed anew.
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { appendToConversation } from '../../../infra/db/conversationAppend.js';
import { classifyDbError } from '../../../infra/db/dbErrors.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { isRetryableWriteError, withWriteRetry } from '../../../infra/db/writeRetry.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, newConversation, seedSession, user } from './storeFixtures.js';

let testDb: TestDatabase;
/** One connection: its prepared statements are the session's own (pg_prepared_statements). */
let single: Kysely<Database>;
const A = 'prep-a';
const B = 'prep-b';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await seedSession(testDb.db, A, [user('a one'), assistant('a two'), user('a three')]);
  await seedSession(testDb.db, B, [user('b one')]);
  single = createDb({ connectionString: testDb.url, maxConnections: 1 });
});
afterAll(async () => {
  await single?.destroy();
  await testDb?.drop();
});

async function prepared(): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(single);
  return rows.map((r) => r.statement);
}

/** The user messages the tenant sees (row-level security), by a statement with a parameter. */
async function userMessages(tenantId: string): Promise<string[]> {
  return withTenant(single, tenantId, async (tx) => {
    const { rows } = await sql<{ content: string }>`
      SELECT content FROM messages WHERE role = ${'user'} ORDER BY id`.execute(tx);
    return rows.map((r) => r.content);
  });
}

describe('prepared statements', () => {
  it('a statement run again is prepared once on the connection; parameterless ones never are', async () => {
    expect(await userMessages(A)).toEqual(['a one', 'a three']);
    expect((await prepared()).filter((s) => s.includes('FROM messages WHERE role'))).toEqual([]);
    await userMessages(A);
    await userMessages(A);
    const statements = await prepared();
    expect(statements.filter((s) => s.includes('FROM messages WHERE role'))).toHaveLength(1);
    // The tenant prelude (BEGIN and the settings as literals) travels unprepared.
    expect(statements.some((s) => s.includes('set_config'))).toBe(false);
  });

  it('a reused statement applies the tenant of each transaction and is planned for its values each time', async () => {
    for (let i = 0; i < 12; i++) {
      expect(await userMessages(i % 3 === 2 ? B : A)).toEqual(i % 3 === 2 ? ['b one'] : ['a one', 'a three']);
    }
    const { rows } = await sql<{ generic_plans: number; custom_plans: number }>`
      SELECT generic_plans, custom_plans FROM pg_prepared_statements
       WHERE statement LIKE '%FROM messages WHERE role%'`.execute(single);
    // plan_cache_mode=force_custom_plan (infra/db/connect.ts): a generic plan can be far worse on skewed tenants.
    // Every execution since it was named: two in the test before, twelve here.
    expect(rows).toEqual([{ generic_plans: 0, custom_plans: 14 }]);
  });

  it('a schema change under a prepared SELECT * fails one attempt as retryable, then it is parsed anew', async () => {
    await sql`CREATE TABLE probe (id integer, label text)`.execute(testDb.db);
    await sql`INSERT INTO probe VALUES (1, 'one')`.execute(testDb.db);
    const read = () => sql<{ id: number }>`SELECT * FROM probe WHERE id >= ${0}`.execute(single);
    await read();
    await read();
    await read();
    await sql`ALTER TABLE probe ADD COLUMN extra text`.execute(testDb.db);
    const failure = await read().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: '0A000' });
    expect(isRetryableWriteError(failure)).toBe(true);
    expect(classifyDbError(failure)).toBe('unavailable');
    const again = await withWriteRetry(read, { sleep: async () => undefined });
    expect(again.rows).toEqual([{ id: 1, label: 'one', extra: null }]);
  });

  it("an append's own statements are planned once per connection; what runs within it, for its values", async () => {
    const conversationId = await newConversation(single, A);
    for (let i = 0; i < 6; i++) {
      await appendToConversation(single, A, conversationId, [{ message: user(`m${i}`), idempotencyKey: `k${i}` }], {
        within: async (tx) => {
          await sql`SELECT count(*) FROM messages WHERE conversation_id = ${conversationId}`.execute(tx);
        },
      });
    }
    const { rows } = await sql<{ statement: string; generic_plans: number; custom_plans: number }>`
      SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`.execute(single);
    const plans = (fragment: string) => {
      const found = rows.filter((r) => r.statement.includes(fragment));
      expect(found, fragment).toHaveLength(1);
      return { generic: found[0]?.generic_plans, custom: found[0]?.custom_plans };
    };
    // Named from the second append on: five executions each, every one on the plan made for the first.
    for (const fragment of ['jsonb_to_recordset', 'FROM unnest', 'FOR NO KEY UPDATE', 'update "conversations"']) {
      expect(plans(fragment), fragment).toEqual({ generic: 5, custom: 0 });
    }
    expect(plans('SELECT count(*) FROM messages WHERE conversation_id')).toEqual({ generic: 0, custom: 5 });
  });
});
