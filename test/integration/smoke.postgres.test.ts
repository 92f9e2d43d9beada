// Migrations from an empty database, CJK search paths (trigram index and LIKE), and row-level security.
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrateToLatest } from '../../infra/db/migrate.js';
import { migrationProvider } from '../../infra/db/migrations/index.js';
import { searchMessages } from '../../infra/db/search/index.js';
import { type TenantTx, withTenant } from '../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../support/harness/db.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'), { migrate: false });
});
afterAll(async () => {
  await testDb?.drop();
});

async function seed(tenantId: string, sessionId: string, texts: string[]): Promise<void> {
  await testDb.db
    .insertInto('tenants')
    .values({ id: tenantId, name: tenantId })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await withTenant(testDb.db, tenantId, async (tx) => {
    await tx.insertInto('sessions').values({ tenant_id: tenantId, id: sessionId, conversation_id: 'conv' }).execute();
    await tx
      .insertInto('messages')
      .values(
        texts.map((content) => ({
          tenant_id: tenantId,
          session_id: sessionId,
          conversation_id: 'conv',
          role: 'user' as const,
          content,
        })),
      )
      .execute();
  });
}

describe('migrations', () => {
  it('migrate up from an empty database creates the schema, and a second run applies nothing', async () => {
    const first = await migrateToLatest(testDb.db);
    expect(first.applied).toEqual([
      '0001_initial',
      '0002_search',
      '0003_api_keys',
      '0004_turns',
      '0005_leakproof_search',
      '0006_conversation_log',
      '0007_compaction_quality',
      '0008_message_state',
      '0009_quiet_batches',
      '0010_search_plan_reuse',
      '0011_notified_since',
      '0012_inline_indexed_text',
      '0013_client_compaction',
      '0014_last_key',
      '0015_turn_replay',
      '0016_native_trigger',
      '0017_app_server',
      '0018_anthropic_native',
      '0019_key_scopes',
      '0020_erasure',
      '0021_event_feed',
      '0022_context_engine',
      '0023_search_cheap_plans',
      '0024_generated_plpgsql',
      '0025_key_notifications',
      '0026_client_compactions',
      '0027_short_pending_lists',
      '0028_oversized_tsvector',
    ]);
    const second = await migrateToLatest(testDb.db);
    expect(second.applied).toEqual([]);
    const tables = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`.execute(
      testDb.db,
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        'compactions',
        'events',
        'message_state',
        'messages',
        'sessions',
        'tenant_markers',
        'tenants',
      ]),
    );
    const ext = await sql<{ extname: string }>`SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'`.execute(
      testDb.db,
    );
    expect(ext.rows).toHaveLength(1);
    // 0027: the search indexes merge their pending lists at 1 MB.
    const options = await sql<{ relname: string; reloptions: string[] | null }>`
      SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'messages_search_%' ORDER BY relname`.execute(
      testDb.db,
    );
    expect(options.rows).toEqual(
      ['messages_search_cjk', 'messages_search_trgm', 'messages_search_tsv'].map((relname) => ({
        relname,
        reloptions: ['gin_pending_list_limit=1024'],
      })),
    );
    const ctype = await sql<{
      ctype: string;
    }>`SELECT datctype AS ctype FROM pg_database WHERE datname = current_database()`.execute(testDb.db);
    expect(ctype.rows[0]?.ctype).not.toBe('C');
  });
});

describe('0010 down and up again', () => {
  it('search answers the same with the single-statement functions of 0005/0008 and with 0010 (down, then up)', async () => {
    await seed('tenant-mig', 'mig-1', ['the deploy failed', 'deploy again', '圧縮を実行', 'zebra']);
    const queries = ['deploy', '圧縮を実行', '圧縮', 'zebra OR deploy'];
    const answers = async () => Promise.all(queries.map((q) => searchMessages(testDb.db, 'tenant-mig', q)));
    const before = await answers();
    expect(before.map((r) => r.length)).toEqual([2, 1, 1, 3]);
    const migrator = new Migrator({ db: testDb.db, provider: migrationProvider });
    const down = await migrator.migrateTo('0009_quiet_batches');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => [r.migrationName, r.status])).toEqual([
      ['0028_oversized_tsvector', 'Success'],
      ['0027_short_pending_lists', 'Success'],
      ['0026_client_compactions', 'Success'],
      ['0025_key_notifications', 'Success'],
      ['0024_generated_plpgsql', 'Success'],
      ['0023_search_cheap_plans', 'Success'],
      ['0022_context_engine', 'Success'],
      ['0021_event_feed', 'Success'],
      ['0020_erasure', 'Success'],
      ['0019_key_scopes', 'Success'],
      ['0018_anthropic_native', 'Success'],
      ['0017_app_server', 'Success'],
      ['0016_native_trigger', 'Success'],
      ['0015_turn_replay', 'Success'],
      ['0014_last_key', 'Success'],
      ['0013_client_compaction', 'Success'],
      ['0012_inline_indexed_text', 'Success'],
      ['0011_notified_since', 'Success'],
      ['0010_search_plan_reuse', 'Success'],
    ]);
    const reset = await sql<{ reloptions: string[] | null }>`
      SELECT reloptions FROM pg_class WHERE relname LIKE 'messages_search_%'`.execute(testDb.db);
    expect(reset.rows.map((r) => r.reloptions)).toEqual([null, null, null]);
    const definition = await sql<{ def: string }>`
      SELECT pg_get_functiondef('dc_search_messages(jsonb, tsquery)'::regprocedure) AS def`.execute(testDb.db);
    expect(definition.rows[0]?.def).toContain('RETURN QUERY EXECUTE statement USING query');
    expect(await answers()).toEqual(before);
    expect((await migrateToLatest(testDb.db)).applied).toEqual([
      '0010_search_plan_reuse',
      '0011_notified_since',
      '0012_inline_indexed_text',
      '0013_client_compaction',
      '0014_last_key',
      '0015_turn_replay',
      '0016_native_trigger',
      '0017_app_server',
      '0018_anthropic_native',
      '0019_key_scopes',
      '0020_erasure',
      '0021_event_feed',
      '0022_context_engine',
      '0023_search_cheap_plans',
      '0024_generated_plpgsql',
      '0025_key_notifications',
      '0026_client_compactions',
      '0027_short_pending_lists',
      '0028_oversized_tsvector',
    ]);
    expect(await answers()).toEqual(before);
  });
});

describe('0014 on conversations stored before it', () => {
  it('gives each the key of its newest keyed message, none to one without', async () => {
    const migrator = new Migrator({ db: testDb.db, provider: migrationProvider });
    expect((await migrator.migrateTo('0013_client_compaction')).error).toBeUndefined();
    await testDb.db.insertInto('tenants').values({ id: 'tenant-0014', name: 'tenant-0014' }).execute();
    for (const [conversation, keys] of [
      ['keyed', ['k:0', null, 'k:2', null]],
      ['unkeyed', [null]],
    ] as const) {
      await sql`INSERT INTO sessions (tenant_id, id, conversation_id) VALUES ('tenant-0014', ${`s-${conversation}`}, ${conversation})`.execute(
        testDb.db,
      );
      await sql`INSERT INTO conversations (tenant_id, id, current_session_id, model, source)
                VALUES ('tenant-0014', ${conversation}, ${`s-${conversation}`}, 'acme-chat', 'api')`.execute(testDb.db);
      for (const key of keys) {
        await sql`INSERT INTO messages (tenant_id, session_id, conversation_id, role, content, idempotency_key)
                  VALUES ('tenant-0014', ${`s-${conversation}`}, ${conversation}, 'user', 'x', ${key})`.execute(
          testDb.db,
        );
      }
    }
    expect((await migrateToLatest(testDb.db)).applied).toEqual([
      '0014_last_key',
      '0015_turn_replay',
      '0016_native_trigger',
      '0017_app_server',
      '0018_anthropic_native',
      '0019_key_scopes',
      '0020_erasure',
      '0021_event_feed',
      '0022_context_engine',
      '0023_search_cheap_plans',
      '0024_generated_plpgsql',
      '0025_key_notifications',
      '0026_client_compactions',
      '0027_short_pending_lists',
      '0028_oversized_tsvector',
    ]);
    const rows = await testDb.db
      .selectFrom('conversations')
      .select(['id', 'last_key'])
      .where('tenant_id', '=', 'tenant-0014')
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { id: 'keyed', last_key: 'k:2' },
      { id: 'unkeyed', last_key: null },
    ]);
  });
});

describe('CJK search paths', () => {
  beforeAll(async () => {
    await seed('tenant-ja', 'ja-1', [
      'コンテキストの圧縮を実行しました',
      '今日は良い天気です',
      'The deploy failed with exit code 137',
      ...Array.from({ length: 3000 }, (_, i) => `filler message number ${i} about kubernetes and 日本語の文章`),
    ]);
  });

  it('finds a Japanese message by a 3-character query through the pg_trgm index', async () => {
    // Flush the GIN pending list and gather statistics, as autovacuum would, so the planner sees the real index.
    await sql`VACUUM ANALYZE messages`.execute(testDb.db);
    // As the owner with the tenant predicate, as the search function (migrations/0005) reads the table.
    const plan = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN SELECT id FROM messages WHERE tenant_id = 'tenant-ja' AND indexed_text ILIKE ${'%テキス%'}`.execute(
      testDb.db,
    );
    const found = await withTenant(testDb.db, 'tenant-ja', (tx) =>
      tx.selectFrom('messages').select('content').where('indexed_text', 'ilike', '%テキス%').execute(),
    );
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('messages_search_trgm');
    expect(found.map((r) => r.content)).toEqual(['コンテキストの圧縮を実行しました']);
  });

  it('the trigram index really holds CJK trigrams (locale is not C)', async () => {
    const res = await sql<{ t: string[] }>`SELECT show_trgm('圧縮を実行') AS t`.execute(testDb.db);
    expect(res.rows[0]?.t.length).toBeGreaterThan(0);
  });

  it('finds a Japanese message by a 2-character query (圧縮) through the LIKE path', async () => {
    const found = await withTenant(testDb.db, 'tenant-ja', (tx) =>
      tx.selectFrom('messages').select('content').where('indexed_text', 'ilike', '%圧縮%').execute(),
    );
    expect(found.map((r) => r.content)).toEqual(['コンテキストの圧縮を実行しました']);
  });

  it('finds Latin words through the tsvector', async () => {
    const found = await withTenant(
      testDb.db,
      'tenant-ja',
      async (tx) =>
        (
          await sql<{ content: string }>`
        SELECT content FROM messages WHERE search_tsv @@ plainto_tsquery('simple', ${'deploy failed'})`.execute(tx)
        ).rows,
    );
    expect(found.map((r) => r.content)).toEqual(['The deploy failed with exit code 137']);
  });
});

describe('row-level security', () => {
  beforeAll(async () => {
    await seed('tenant-a', 'a-1', ['secret of tenant A']);
    await seed('tenant-b', 'b-1', ['secret of tenant B']);
  });

  it('a query under tenant A cannot see tenant B rows, even without a WHERE clause', async () => {
    const visible = await withTenant(testDb.db, 'tenant-a', (tx) =>
      tx.selectFrom('messages').select(['tenant_id', 'content']).execute(),
    );
    expect(visible).toEqual([{ tenant_id: 'tenant-a', content: 'secret of tenant A' }]);
    const sessions = await withTenant(testDb.db, 'tenant-a', (tx) => tx.selectFrom('sessions').select('id').execute());
    expect(sessions.map((s) => s.id)).toEqual(['a-1']);
  });

  it('tenant A cannot write a row for tenant B', async () => {
    await expect(
      withTenant(testDb.db, 'tenant-a', (tx) =>
        tx.insertInto('sessions').values({ tenant_id: 'tenant-b', id: 'sneaky', conversation_id: 'x' }).execute(),
      ),
    ).rejects.toThrow(/row-level security/);
  });

  it('the tenant role without a tenant setting sees no rows, and the search function refuses it', async () => {
    const asRole = <T>(fn: (tx: TenantTx) => Promise<T>) =>
      testDb.db.transaction().execute(async (tx) => {
        await sql`SET LOCAL ROLE dc_tenant`.execute(tx);
        return fn(tx);
      });
    expect(await asRole((tx) => tx.selectFrom('messages').select('id').execute())).toEqual([]);
    const plan = { tenant: '', path: 'cjk', groups: [[{ kind: 'ilike', text: '', grams: [], negated: false }]] };
    await expect(
      asRole((tx) => sql`SELECT * FROM dc_search_messages(${JSON.stringify(plan)}::jsonb, NULL)`.execute(tx)),
    ).rejects.toThrow(/app\.tenant_id/);
  });

  it('search under tenant A cannot see tenant B rows', async () => {
    const found = await searchMessages(testDb.db, 'tenant-a', 'secret', { includeInactive: true });
    expect(found.map((r) => r.snippet)).toEqual(['>>>secret<<< of tenant A']);
  });

  it('the tenant role can never delete a message (nothing is ever deleted)', async () => {
    await expect(
      withTenant(testDb.db, 'tenant-a', (tx) =>
        tx.deleteFrom('messages').where('tenant_id', '=', 'tenant-a').execute(),
      ),
    ).rejects.toThrow(/permission denied/);
  });
});
