// withTenant's transactions on a pooled, pipelined connection (infra/db/tenant.ts, infra/db/pipelinedTransactions.ts):
// BEGIN and the tenant settings travel with the first statement and a read-only COMMIT is not awaited, so these
// check what that must never change — the first statement runs as the tenant role with the tenant set, nothing of a
// tenant's transaction survives into the next use of the same connection, and a failed prelude stops the statement
// that travels with it; a tenant switched within a transaction (tenantSwitch, a group of appends of several
// tenants) holds exactly the statements issued after it.

import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { TENANT_ROLE } from '../../../infra/db/migrations/0001_initial.js';
import { deferredStatement } from '../../../infra/db/pipelinedTransactions.js';
import { pipelined } from '../../../infra/db/queuedStatements.js';
import type { Database } from '../../../infra/db/schema.js';
import { CUSTOM_PLANS, type TenantTx, tenantSwitch, withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { countingWrites } from '../../support/harness/socketWrites.js';
import { assistant, seedSession, user } from './storeFixtures.js';

let testDb: TestDatabase;
/** One connection: every transaction below reuses the connection the one before it used. */
let single: Kysely<Database>;
const A = 'pipe-a';
const B = 'pipe-b';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await seedSession(testDb.db, A, [user('a one'), assistant('a two')]);
  await seedSession(testDb.db, B, [user('b one')]);
  single = createDb({ connectionString: testDb.url, maxConnections: 1 });
});
afterAll(async () => {
  await single?.destroy();
  await testDb?.drop();
});

interface Context {
  pid: number;
  user: string;
  sessionUser: string;
  tenant: string | null;
  visibleTenants: string[];
}

/** Who the statement runs as, which tenant is set, and whose messages row-level security lets it see. */
const contextQuery = (db: Kysely<Database> | TenantTx) =>
  sql<Context>`
    SELECT pg_backend_pid() AS pid, current_user AS "user", session_user AS "sessionUser",
           nullif(current_setting('app.tenant_id', true), '') AS tenant,
           ARRAY(SELECT DISTINCT tenant_id FROM messages ORDER BY 1) AS "visibleTenants"`.compile(db);

async function context(db: Kysely<Database> | TenantTx): Promise<Context> {
  return (await db.executeQuery(contextQuery(db))).rows[0] as Context;
}

/** The ways a tenant transaction can end; each is followed by the next user of the same connection. */
const endings: Array<[string, (db: Kysely<Database>) => Promise<unknown>]> = [
  ['read-only, committed', (db) => withTenant(db, A, context, { readOnly: true })],
  ['read-write, committed', (db) => withTenant(db, A, context)],
  [
    'failed after a statement',
    (db) =>
      withTenant(db, A, async (tx) => {
        await context(tx);
        throw new Error('boom');
      }),
  ],
  [
    'failed before any statement',
    (db) =>
      withTenant(db, A, async () => {
        throw new Error('boom');
      }),
  ],
  ['no statement at all', (db) => withTenant(db, A, async () => 'nothing', { readOnly: true })],
  ['a statement that failed', (db) => withTenant(db, A, (tx) => sql`SELECT 1 / 0`.execute(tx))],
];

describe('withTenant on a reused connection', () => {
  it('the first statement runs as the tenant role, with the tenant set, seeing only its rows', async () => {
    for (const readOnly of [true, false]) {
      const seen = await withTenant(single, A, context, { readOnly });
      expect(seen).toMatchObject({ user: TENANT_ROLE, tenant: A, visibleTenants: [A] });
      expect(seen.sessionUser).not.toBe(TENANT_ROLE);
    }
  });

  it.each(endings)('%s: the next user of the connection gets neither the role nor the tenant', async (_, ending) => {
    const { pid } = await context(single);
    await ending(single).catch(() => undefined);
    // Started at once: a read-only COMMIT may still be on its way; it runs first all the same.
    const [owner, other] = await Promise.all([context(single), withTenant(single, B, context)]);
    expect(owner.pid).toBe(pid);
    expect(owner.user).toBe(owner.sessionUser);
    expect(owner.tenant).toBeNull();
    expect(owner.visibleTenants).toEqual([A, B]);
    expect(other).toMatchObject({ pid, user: TENANT_ROLE, tenant: B, visibleTenants: [B] });
  });

  it('interleaved transactions of two tenants on two connections each see their own tenant only', async () => {
    const db = createDb({ connectionString: testDb.url, maxConnections: 2 });
    try {
      const runs = Array.from({ length: 40 }, (_, i) => {
        const tenant = i % 2 === 0 ? A : B;
        return withTenant(db, tenant, context, { readOnly: i % 3 === 0 }).then((seen) => ({ tenant, seen }));
      });
      for (const { tenant, seen } of await Promise.all(runs)) {
        expect(seen).toMatchObject({ user: TENANT_ROLE, tenant, visibleTenants: [tenant] });
      }
      expect((await context(db)).tenant).toBeNull();
    } finally {
      await db.destroy();
    }
  });

  it('a read-only tenant transaction cannot write', async () => {
    await expect(
      withTenant(
        single,
        A,
        (tx) => sql`INSERT INTO tenant_markers (tenant_id, key, value) VALUES (${A}, 'ro', 'x')`.execute(tx),
        { readOnly: true },
      ),
    ).rejects.toThrow(/read-only transaction/);
    const markers = await sql`SELECT 1 FROM tenant_markers WHERE key = 'ro'`.execute(single);
    expect(markers.rows).toEqual([]);
  });

  it('a failing prelude stops the statement that travels with it', async () => {
    const attempt = single.transaction().execute(async (tx) => {
      await tx.executeQuery(deferredStatement('SELECT 1 / 0'));
      await sql`INSERT INTO tenant_markers (tenant_id, key, value) VALUES (${A}, 'after-prelude', 'x')`.execute(tx);
    });
    await expect(attempt).rejects.toThrow(/division by zero/);
    const markers = await sql`SELECT 1 FROM tenant_markers WHERE key = 'after-prelude'`.execute(single);
    expect(markers.rows).toEqual([]);
  });

  it('refuses a tenant id the tenants table would refuse, before sending anything', async () => {
    for (const bad of ["a'); SELECT 1; --", '', '-a', 'a'.repeat(65)]) {
      await expect(withTenant(single, bad, context)).rejects.toThrow(/tenantId must match/);
    }
  });
});

const planMode = async (db: Kysely<Database> | TenantTx) =>
  (await sql<{ mode: string }>`SELECT current_setting('plan_cache_mode') AS mode`.execute(db)).rows[0]?.mode;

describe('the first flight of a transaction', () => {
  it('the prelude and the first statement leave in one write to the socket', async () => {
    // A connection already open, so every statement is written as it is submitted.
    await withTenant(single, A, context);
    const { result: seen, writes } = await countingWrites(() => withTenant(single, A, context));
    expect(seen).toMatchObject({ user: TENANT_ROLE, tenant: A });
    // One write for the prelude and the statement (its chunks: the prelude's message and the statement's), one for
    // the COMMIT.
    expect(writes.length).toBe(2);
    expect(writes[0]).toBeGreaterThan(1);
  });
});

describe('plans and statements held back later in a transaction', () => {
  it('genericPlans: planned once per connection until CUSTOM_PLANS; the next user gets the pool default', async () => {
    expect(await planMode(single)).toBe('force_custom_plan');
    const { result, writes } = await countingWrites(() =>
      withTenant(
        single,
        A,
        async (tx) => {
          const before = await planMode(tx);
          await tx.executeQuery(CUSTOM_PLANS());
          const after = await planMode(tx);
          return { before, after, seen: await context(tx) };
        },
        { genericPlans: true },
      ),
    );
    expect(result).toMatchObject({ before: 'force_generic_plan', after: 'force_custom_plan' });
    expect(result.seen).toMatchObject({ user: TENANT_ROLE, tenant: A, visibleTenants: [A] });
    // The prelude with the first statement; CUSTOM_PLANS with the statement after it; the third; the COMMIT.
    expect(writes.length).toBe(4);
    expect(writes[1]).toBeGreaterThan(1);
    expect(await planMode(single)).toBe('force_custom_plan');
    expect(await withTenant(single, B, planMode)).toBe('force_custom_plan');
  });

  it('a statement held back later in a transaction runs before the next statement, or not at all', async () => {
    const key = `held-${Date.now()}`;
    const marker = (value: string) =>
      deferredStatement(`INSERT INTO tenant_markers (tenant_id, key, value) VALUES ('${A}', '${key}', '${value}')`);
    await withTenant(single, A, async (tx) => {
      await context(tx);
      await tx.executeQuery(marker('sent'));
      const { rows } = await sql<{ value: string }>`
        SELECT value FROM tenant_markers WHERE key = ${key}`.execute(tx);
      expect(rows).toEqual([{ value: 'sent' }]);
      // Nothing follows this one: the transaction ends without it.
      await tx.executeQuery(marker('never'));
    });
    const { rows } = await sql<{ value: string }>`
      SELECT value FROM tenant_markers WHERE key = ${key} ORDER BY value`.execute(single);
    expect(rows).toEqual([{ value: 'sent' }]);
  });

  it('a held-back statement that fails fails the statement it travels with, and the transaction', async () => {
    const key = `held-fail-${Date.now()}`;
    const attempt = withTenant(single, A, async (tx) => {
      await context(tx);
      await tx.executeQuery(deferredStatement('SELECT 1 / 0'));
      await sql`INSERT INTO tenant_markers (tenant_id, key, value) VALUES (${A}, ${key}, 'x')`.execute(tx);
    });
    await expect(attempt).rejects.toThrow(/division by zero/);
    const markers = await sql`SELECT 1 FROM tenant_markers WHERE key = ${key}`.execute(single);
    expect(markers.rows).toEqual([]);
    expect((await context(single)).tenant).toBeNull();
  });
});

describe('tenantSwitch: another tenant for the rest of a transaction', () => {
  it('scopes the statements after it to the new tenant, queued ones before it to the old, and ends with it', async () => {
    const { result, writes } = await countingWrites(() =>
      withTenant(single, A, async (tx) => {
        // Queued before the switch, all held back until the last statement: each runs under the tenant set when
        // it was issued, although the transaction's prelude has not left yet.
        const before = await pipelined(tx, contextQuery(tx));
        await tx.executeQuery(tenantSwitch(B));
        const queuedAfter = await pipelined(tx, contextQuery(tx));
        await tx.executeQuery(tenantSwitch(A));
        const back = await context(tx);
        return { before: (await before.result).rows[0], after: (await queuedAfter.result).rows[0], back };
      }),
    );
    expect(result.before).toMatchObject({ user: TENANT_ROLE, tenant: A, visibleTenants: [A] });
    expect(result.after).toMatchObject({ user: TENANT_ROLE, tenant: B, visibleTenants: [B] });
    expect(result.back).toMatchObject({ user: TENANT_ROLE, tenant: A, visibleTenants: [A] });
    // Every statement and both switches in one flight; the COMMIT.
    expect(writes.length).toBe(2);
    const after = await context(single);
    expect(after.tenant).toBeNull();
    expect(after.user).toBe(after.sessionUser);
  });

  it('row-level security holds each statement to the tenant set: a row of the other one is neither seen nor written', async () => {
    const key = `switch-${Date.now()}`;
    const attempt = withTenant(single, A, async (tx) => {
      await tx.executeQuery(tenantSwitch(B));
      const visible = await sql<{ tenant_id: string }>`
        SELECT DISTINCT tenant_id FROM messages WHERE tenant_id = ${A}`.execute(tx);
      expect(visible.rows).toEqual([]);
      await sql`INSERT INTO tenant_markers (tenant_id, key, value) VALUES (${A}, ${key}, 'x')`.execute(tx);
    });
    await expect(attempt).rejects.toThrow(/row-level security/);
    const markers = await sql`SELECT 1 FROM tenant_markers WHERE key = ${key}`.execute(single);
    expect(markers.rows).toEqual([]);
  });

  it('refuses a tenant id the tenants table would refuse, before anything is held back', () => {
    for (const bad of ["a'); SELECT 1; --", '', '-a', 'a'.repeat(65)]) {
      expect(() => tenantSwitch(bad)).toThrow(/tenantSwitch: tenantId must match/);
    }
  });
});
