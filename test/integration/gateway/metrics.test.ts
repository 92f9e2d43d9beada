// `/metrics` (issue #9 §8): compaction counts and tokens saved come from the totals the database keeps per tenant,
// trigger and status (migrations/0005), written through the store as the tenant role; and the optional metrics key.
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StoredCompactionStatus, StoredCompactionTrigger } from '../../../contracts/compaction.js';
import { createCompactionRecord, updateCompaction } from '../../../infra/db/compactions.js';
import { createSession } from '../../../infra/db/sessions.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { errorHandler } from '../../../workers/gateway/errors.js';
import { opsRoutes } from '../../../workers/gateway/routes/ops.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;
const apps: FastifyInstance[] = [];
const METRICS_KEY = 'metrics-key-for-tests';

async function opsApp(metricsKey: string | null): Promise<FastifyInstance> {
  const app = Fastify();
  app.setErrorHandler(errorHandler);
  await app.register(
    opsRoutes({ db: testDb.db, metrics: createMetrics({ db: testDb.db, defaultMetrics: false }), metricsKey }),
  );
  apps.push(app);
  return app;
}

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await testDb?.drop();
});

let seq = 0;
/** A compaction of `tenantId` written as the store writes it (the tenant role), then moved to `status`. */
async function compaction(
  tenantId: string,
  trigger: StoredCompactionTrigger,
  status: StoredCompactionStatus | null,
  tokens?: { before: number; after: number },
): Promise<string> {
  seq += 1;
  await ensureTenant(testDb.db, { id: tenantId, name: tenantId });
  await createSession(testDb.db, tenantId, { id: `s-${seq}`, conversationId: `conv-${seq}` });
  const id = `compact-${seq}`;
  await createCompactionRecord(testDb.db, tenantId, {
    id,
    sessionId: `s-${seq}`,
    conversationId: `conv-${seq}`,
    seq: 1,
    trigger,
    inPlace: true,
  });
  if (status) {
    await updateCompaction(testDb.db, tenantId, id, {
      status,
      ...(tokens ? { stats: { tokensBefore: tokens.before, tokensAfter: tokens.after, fallbackUsed: false } } : {}),
    });
  }
  return id;
}

/** The compaction gauges of one scrape: `trigger/status` → count, and the tokens saved. */
async function scrape(app: FastifyInstance): Promise<{ counts: Record<string, number>; saved: number }> {
  const response = await app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  const counts: Record<string, number> = {};
  for (const [, trigger, status, n] of response.body.matchAll(
    /^dctx_compactions\{trigger="(\w+)",status="(\w+)"\} (\d+)$/gm,
  )) {
    counts[`${trigger}/${status}`] = Number(n);
  }
  const saved = /^dctx_compaction_tokens_saved (\d+)$/m.exec(response.body)?.[1];
  return { counts, saved: Number(saved) };
}

/** The same figures computed from every compaction row (what a scrape used to run). */
async function countedFromRows(): Promise<Record<string, number>> {
  const rows = await sql<{ trigger: string; status: string; n: string }>`
    SELECT "trigger", status, count(*) AS n FROM compactions GROUP BY 1, 2`.execute(testDb.db);
  return Object.fromEntries(rows.rows.map((r) => [`${r.trigger}/${r.status}`, Number(r.n)]));
}

describe('compaction totals on /metrics', () => {
  it('counts compactions by trigger and status over all tenants, and the tokens committed compactions saved', async () => {
    const app = await opsApp(null);
    expect(await scrape(app)).toEqual({ counts: {}, saved: 0 });

    await compaction('metrics-a', 'manual', 'committed', { before: 1000, after: 200 });
    await compaction('metrics-a', 'preflight', 'fallback', { before: 500, after: 100 });
    await compaction('metrics-a', 'preflight', 'failed', { before: 900, after: 0 });
    const pending = await compaction('metrics-a', 'hygiene', null);
    await compaction('metrics-b', 'manual', 'committed', { before: 3000, after: 1000 });
    await compaction('metrics-b', 'manual', 'aborted');
    const expected = {
      'manual/committed': 2,
      'preflight/fallback': 1,
      'preflight/failed': 1,
      'hygiene/pending': 1,
      'manual/aborted': 1,
    };
    expect(await scrape(app)).toEqual({ counts: expected, saved: 800 + 400 + 2000 });
    expect(await countedFromRows()).toEqual(expected);

    // A phase result changes nothing counted; a status change moves the compaction between buckets.
    await updateCompaction(testDb.db, 'metrics-a', pending, { attempts: 2, plan: { head: 1 } });
    expect((await scrape(app)).counts).toEqual(expected);
    await updateCompaction(testDb.db, 'metrics-a', pending, {
      status: 'committed',
      stats: { tokensBefore: 100, tokensAfter: 40 },
    });
    const moved = { ...expected, 'hygiene/committed': 1 } as Record<string, number>;
    delete moved['hygiene/pending'];
    expect(await scrape(app)).toEqual({ counts: moved, saved: 3200 + 60 });
    expect(await countedFromRows()).toEqual(moved);
  });

  it('the totals are owner-only: the tenant role can neither read nor write them', async () => {
    const attempt = (statement: string) =>
      testDb.db.transaction().execute(async (tx) => {
        await sql`SELECT set_config('role', 'dc_tenant', true), set_config('app.tenant_id', 'metrics-a', true)`.execute(
          tx,
        );
        await sql.raw(statement).execute(tx);
      });
    await expect(attempt('SELECT * FROM compaction_totals')).rejects.toThrow(/permission denied/);
    await expect(attempt('UPDATE compaction_totals SET compactions = 0')).rejects.toThrow(/permission denied/);
  });
});

describe('the metrics key', () => {
  it('without a configured key /metrics is open', async () => {
    const app = await opsApp(null);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });

  it('with a key, /metrics needs `Authorization: Bearer <key>`; /healthz stays open', async () => {
    const app = await opsApp(METRICS_KEY);
    const get = (authorization?: string) =>
      app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
    for (const authorization of [
      undefined,
      'Bearer wrong',
      `Bearer ${METRICS_KEY}x`,
      METRICS_KEY,
      `Basic ${METRICS_KEY}`,
    ]) {
      const refused = await get(authorization);
      expect(refused.statusCode, String(authorization)).toBe(401);
      expect(refused.json()).toEqual({
        error: 'Unauthorized',
        message: expect.stringContaining('metrics key'),
        statusCode: 401,
      });
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    const allowed = await get(`Bearer ${METRICS_KEY}`);
    expect(allowed.statusCode).toBe(200);
    expect(allowed.body).toContain('# TYPE dctx_compactions gauge');
    expect((await get(`bearer ${METRICS_KEY}`)).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ ok: true });
  });
});
