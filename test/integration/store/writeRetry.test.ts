// Write retries (SPEC §13.6) against real PostgreSQL errors: lock_not_available, serialization_failure and
// deadlock_detected are retried as whole transactions; anything else is raised at once; at most 15 attempts.
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { setTenantMarker } from '../../../infra/db/tenants.js';
import {
  MAX_WRITE_ATTEMPTS,
  retrySleepMs,
  sqlState,
  withTenantWrite,
  withWriteRetry,
} from '../../../infra/db/writeRetry.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { type SeededSession, seedSession, user } from './storeFixtures.js';

let testDb: TestDatabase;
let seeded: SeededSession;
const TENANT = 'tenant-retry';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  seeded = await seedSession(testDb.db, TENANT, [user('hello')]);
});
afterAll(async () => {
  await testDb?.drop();
});

/** A second connection holding a row lock on the session until release(). */
async function holdSessionLock(sessionId: string): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await client.query('COMMIT');
      await client.end();
    },
  };
}

function recordingSleep() {
  const sleeps: number[] = [];
  return { sleeps, sleep: async (ms: number) => void sleeps.push(ms) };
}

function lockNowait(db: Kysely<Database>): Promise<string> {
  return withTenant(db, TENANT, async (tx) => {
    await sql`SELECT id FROM sessions WHERE id = ${seeded.sessionId} FOR UPDATE NOWAIT`.execute(tx);
    return 'locked';
  });
}

describe('withWriteRetry', () => {
  it('retries a real lock_not_available (55P03) and succeeds once the lock is released', async () => {
    const holder = await holdSessionLock(seeded.sessionId);
    const errors: string[] = [];
    let attempts = 0;
    const sleeps: number[] = [];
    const result = await withWriteRetry(
      async () => {
        attempts++;
        try {
          return await lockNowait(testDb.db);
        } catch (error) {
          errors.push(sqlState(error) ?? 'none');
          throw error;
        }
      },
      {
        sleep: async (ms) => {
          sleeps.push(ms);
          if (sleeps.length === 2) await holder.release();
        },
      },
    );
    await holder.release();
    expect(result).toBe('locked');
    expect(attempts).toBe(3);
    expect(errors).toEqual(['55P03', '55P03']);
    expect(sleeps).toHaveLength(2);
    for (const ms of sleeps) {
      expect(ms).toBeGreaterThanOrEqual(20);
      expect(ms).toBeLessThanOrEqual(150);
    }
  });

  it('retries a real serialization failure (40001) of a repeatable-read transaction, re-running it whole', async () => {
    await setTenantMarker(testDb.db, TENANT, 'counter', '0');
    let attempts = 0;
    const states: string[] = [];
    const { sleeps, sleep } = recordingSleep();
    await withWriteRetry(
      () =>
        testDb.db
          .transaction()
          .setIsolationLevel('repeatable read')
          .execute(async (tx) => {
            attempts++;
            await sql`SET LOCAL ROLE dc_tenant`.execute(tx);
            await sql`SELECT set_config('app.tenant_id', ${TENANT}, true)`.execute(tx);
            const row = await tx
              .selectFrom('tenant_markers')
              .select('value')
              .where('key', '=', 'counter')
              .executeTakeFirstOrThrow();
            // A concurrent writer commits after our snapshot, on the first attempt only.
            if (attempts === 1) await setTenantMarker(testDb.db, TENANT, 'counter', '10');
            try {
              await tx
                .updateTable('tenant_markers')
                .set({ value: String(Number(row.value) + 1) })
                .where('key', '=', 'counter')
                .execute();
            } catch (error) {
              states.push(sqlState(error) ?? 'none');
              throw error;
            }
          }),
      { sleep },
    );
    expect(states).toEqual(['40001']);
    expect(attempts).toBe(2);
    expect(sleeps).toHaveLength(1);
    const value = await withTenant(testDb.db, TENANT, (tx) =>
      tx.selectFrom('tenant_markers').select('value').where('key', '=', 'counter').executeTakeFirstOrThrow(),
    );
    expect(value.value).toBe('11');
  });

  it('retries the victim of a real deadlock (40P01); both transactions end up committed', async () => {
    await setTenantMarker(testDb.db, TENANT, 'left', '');
    await setTenantMarker(testDb.db, TENANT, 'right', '');
    let firstLocks = 0;
    let bothLocked!: () => void;
    const barrier = new Promise<void>((resolve) => {
      bothLocked = resolve;
    });
    const states: string[] = [];
    const { sleeps, sleep } = recordingSleep();
    let attempts = 0;
    const writer = (first: string, second: string, tag: string) => {
      let mine = 0;
      return withTenantWrite(
        testDb.db,
        TENANT,
        async (tx) => {
          mine++;
          attempts++;
          const set = (key: string) =>
            tx
              .updateTable('tenant_markers')
              .set({ value: sql`value || ${tag}` })
              .where('key', '=', key)
              .execute();
          await set(first);
          if (mine === 1) {
            firstLocks++;
            if (firstLocks === 2) bothLocked();
            await barrier;
          }
          try {
            await set(second);
          } catch (error) {
            states.push(sqlState(error) ?? 'none');
            throw error;
          }
        },
        { sleep },
      );
    };
    await Promise.all([writer('left', 'right', 'A'), writer('right', 'left', 'B')]);
    // At least the one deadlock of the barrier; under load the victim's retry can meet the other writer again (CI
    // saw two). Every failure is a deadlock, and each one costs exactly one more attempt after one backoff.
    expect(states.length).toBeGreaterThanOrEqual(1);
    expect(new Set(states)).toEqual(new Set(['40P01']));
    expect(attempts).toBe(2 + states.length);
    expect(sleeps).toHaveLength(states.length);
    const values = await withTenant(testDb.db, TENANT, (tx) =>
      tx
        .selectFrom('tenant_markers')
        .select(['key', 'value'])
        .where('key', 'in', ['left', 'right'])
        .orderBy('key')
        .execute(),
    );
    // Each writer appended its tag to both keys exactly once (the rolled-back attempt left no trace).
    for (const { value } of values) expect([...value].sort().join('')).toBe('AB');
  });

  it('raises any other error at once (a real row-level-security violation, 42501)', async () => {
    let attempts = 0;
    const { sleeps, sleep } = recordingSleep();
    const attempt = withTenantWrite(
      testDb.db,
      TENANT,
      async (tx) => {
        attempts++;
        await tx.insertInto('sessions').values({ tenant_id: 'someone-else', id: 'x', conversation_id: 'c' }).execute();
      },
      { sleep },
    );
    await expect(attempt).rejects.toMatchObject({ code: '42501' });
    expect(attempts).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it('gives up after 15 attempts (14 sleeps) and raises the last error', async () => {
    const holder = await holdSessionLock(seeded.sessionId);
    try {
      let attempts = 0;
      const { sleeps, sleep } = recordingSleep();
      const attempt = withWriteRetry(
        () => {
          attempts++;
          return lockNowait(testDb.db);
        },
        { sleep, random: () => 0.5 },
      );
      await expect(attempt).rejects.toMatchObject({ code: '55P03' });
      expect(attempts).toBe(MAX_WRITE_ATTEMPTS);
      expect(attempts).toBe(15);
      expect(sleeps).toEqual(Array.from({ length: 14 }, () => 85));

      let limited = 0;
      await expect(
        withWriteRetry(
          () => {
            limited++;
            return lockNowait(testDb.db);
          },
          { sleep, maxAttempts: 3 },
        ),
      ).rejects.toMatchObject({ code: '55P03' });
      expect(limited).toBe(3);
    } finally {
      await holder.release();
    }
  });

  it('sleeps a uniformly random whole number of milliseconds in [20, 150]', () => {
    expect(retrySleepMs(() => 0)).toBe(20);
    expect(retrySleepMs(() => 0.999_999_999)).toBe(150);
    expect(retrySleepMs(() => 0.5)).toBe(85);
    const seen = new Set(Array.from({ length: 5_000 }, () => retrySleepMs(Math.random)));
    expect(Math.min(...seen)).toBe(20);
    expect(Math.max(...seen)).toBe(150);
  });

  it('store writes use it: an append that hits lock_timeout is retried until the lock is released', async () => {
    await sql`ALTER DATABASE ${sql.id(testDb.name)} SET lock_timeout = '40ms'`.execute(testDb.db);
    const db = createDb({ connectionString: testDb.url, maxConnections: 2 });
    try {
      const holder = await holdSessionLock(seeded.sessionId);
      const releaseLater = new Promise((resolve) => setTimeout(resolve, 300)).then(() => holder.release());
      const started = performance.now();
      const result = await appendMessages(db, TENANT, seeded.sessionId, [
        { message: user('after the lock'), idempotencyKey: 'after-lock' },
      ]);
      await releaseLater;
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
      expect(result.appended).toHaveLength(1);
      const transcript = await loadTranscript(db, TENANT, seeded.sessionId);
      expect(transcript.map((r) => r.message.content)).toContain('after the lock');
    } finally {
      await db.destroy();
      await sql`ALTER DATABASE ${sql.id(testDb.name)} RESET lock_timeout`.execute(testDb.db);
    }
  });
});
