// Tenants, policies, markers, sessions and compaction records on the real PostgreSQL.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createCompactionRecord,
  getCompaction,
  latestCompactionOfSession,
  listCompactions,
  updateCompaction,
} from '../../../infra/db/compactions.js';
import { createSession, getSession, listConversationSessions } from '../../../infra/db/sessions.js';
import {
  ensureTenant,
  getTenant,
  getTenantMarker,
  getTenantPolicy,
  setTenantMarker,
  setTenantPolicy,
} from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { seedSession, user } from './storeFixtures.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

describe('tenants', () => {
  it('ensureTenant is idempotent and keeps the first name', async () => {
    const first = await ensureTenant(testDb.db, { id: 'acme', name: 'Acme' });
    const second = await ensureTenant(testDb.db, { id: 'acme', name: 'Renamed' });
    expect(second).toEqual(first);
    expect(first).toMatchObject({ id: 'acme', name: 'Acme', policy: {}, policy_version: 0 });
    expect(await getTenant(testDb.db, 'acme')).toEqual(first);
    expect(await getTenant(testDb.db, 'nobody')).toBeUndefined();
  });

  it('setTenantPolicy stores the raw override, bumps the version once per change', async () => {
    await ensureTenant(testDb.db, { id: 'policy-co', name: 'P' });
    expect(await getTenantPolicy(testDb.db, 'policy-co')).toEqual({ policy: {}, version: 0 });
    const policy = { compression: { threshold: 0.7, model_thresholds: { 'gpt-5': 0.6 } } };
    expect(await setTenantPolicy(testDb.db, 'policy-co', policy)).toEqual({ policy, version: 1 });
    // The same object again (a retried call) does not bump.
    expect(await setTenantPolicy(testDb.db, 'policy-co', structuredClone(policy))).toEqual({ policy, version: 1 });
    const next = { compression: { in_place: false } };
    expect(await setTenantPolicy(testDb.db, 'policy-co', next)).toEqual({ policy: next, version: 2 });
    expect(await getTenantPolicy(testDb.db, 'policy-co')).toEqual({ policy: next, version: 2 });
    expect(await getTenantPolicy(testDb.db, 'nobody')).toBeUndefined();
    await expect(setTenantPolicy(testDb.db, 'nobody', {})).rejects.toThrow(/not found/);
    await expect(setTenantPolicy(testDb.db, 'policy-co', [] as never)).rejects.toBeInstanceOf(TypeError);
    await expect(setTenantPolicy(testDb.db, 'policy-co', new Date() as never)).rejects.toBeInstanceOf(TypeError);
  });

  it('tenant markers: absent, set, overwritten', async () => {
    await ensureTenant(testDb.db, { id: 'marker-co', name: 'M' });
    expect(await getTenantMarker(testDb.db, 'marker-co', 'codex_gpt55_autoraise_notice')).toBeUndefined();
    await setTenantMarker(testDb.db, 'marker-co', 'codex_gpt55_autoraise_notice', '231200');
    await setTenantMarker(testDb.db, 'marker-co', 'codex_gpt55_autoraise_notice', '231201');
    expect(await getTenantMarker(testDb.db, 'marker-co', 'codex_gpt55_autoraise_notice')).toBe('231201');
  });
});

describe('sessions', () => {
  it('createSession is idempotent: the same id twice returns the stored session', async () => {
    await ensureTenant(testDb.db, { id: 'sess-co', name: 'S' });
    const input = { id: 's1', conversationId: 'c1', source: 'cli', model: 'm', provider: 'p', title: 'T' };
    const first = await createSession(testDb.db, 'sess-co', input);
    const second = await createSession(testDb.db, 'sess-co', { ...input, title: 'other' });
    expect(second).toEqual(first);
    expect(first).toMatchObject({ source: 'cli', title: 'T', compression_count: 0, ended_at: null });
    await createSession(testDb.db, 'sess-co', { id: 's2', conversationId: 'c1', parentSessionId: 's1' });
    expect((await getSession(testDb.db, 'sess-co', 's2'))?.source).toBe('api');
    expect((await listConversationSessions(testDb.db, 'sess-co', 'c1')).map((s) => s.id)).toEqual(['s1', 's2']);
  });
});

describe('compaction records', () => {
  it('create is idempotent; update patches phase results; list and latest are newest first', async () => {
    const seeded = await seedSession(testDb.db, 'records-co', [user('x')]);
    const base = {
      sessionId: seeded.sessionId,
      conversationId: seeded.conversationId,
      trigger: 'preflight' as const,
      inPlace: true,
      focusTopic: 'auth',
      previousSummary: 'earlier',
    };
    const first = await createCompactionRecord(testDb.db, 'records-co', { ...base, id: 'c-1', seq: 1 });
    expect(first).toMatchObject({ status: 'pending', seq: 1, focus_topic: 'auth', previous_summary: 'earlier' });
    expect(await createCompactionRecord(testDb.db, 'records-co', { ...base, id: 'c-1', seq: 99 })).toEqual(first);

    const updated = await updateCompaction(testDb.db, 'records-co', 'c-1', {
      plan: { headEnd: 1, cut: 3, inputRowIds: [1, 2, 3] },
      prune_result: JSON.stringify({ prunedCount: 2 }),
      status: 'running',
      attempts: 2,
      failure_class: 'timeout',
      compacted_row_ids: [5, 6],
    });
    expect(updated).toMatchObject({
      plan: { headEnd: 1, cut: 3, inputRowIds: [1, 2, 3] },
      prune_result: { prunedCount: 2 },
      status: 'running',
      attempts: 2,
      failure_class: 'timeout',
      compacted_row_ids: [5, 6],
    });
    expect(updated!.updated_at.getTime()).toBeGreaterThanOrEqual(first.updated_at.getTime());
    expect(await updateCompaction(testDb.db, 'records-co', 'missing', { status: 'failed' })).toBeUndefined();
    expect((await getCompaction(testDb.db, 'records-co', 'c-1'))?.compacted_row_ids).toEqual([5, 6]);

    await createCompactionRecord(testDb.db, 'records-co', { ...base, id: 'c-2', seq: 2 });
    await createCompactionRecord(testDb.db, 'records-co', { ...base, id: 'c-3', seq: 3, trigger: 'hygiene' });
    await updateCompaction(testDb.db, 'records-co', 'c-3', { status: 'failed', error: 'boom' });

    const all = await listCompactions(testDb.db, 'records-co');
    expect(all.map((c) => c.id)).toEqual(['c-3', 'c-2', 'c-1']);
    expect(
      (await listCompactions(testDb.db, 'records-co', { status: ['failed', 'running', 'no-such-status'] })).map(
        (c) => c.id,
      ),
    ).toEqual(['c-3', 'c-1']);
    expect(await listCompactions(testDb.db, 'records-co', { status: ['no-such-status'] })).toEqual([]);
    expect((await listCompactions(testDb.db, 'records-co', { limit: 1, offset: 1 })).map((c) => c.id)).toEqual(['c-2']);
    expect(await listCompactions(testDb.db, 'records-co', { sessionId: 'other' })).toEqual([]);
    expect((await latestCompactionOfSession(testDb.db, 'records-co', seeded.sessionId))?.id).toBe('c-3');
    expect(
      (await latestCompactionOfSession(testDb.db, 'records-co', seeded.sessionId, { status: ['pending'] }))?.id,
    ).toBe('c-2');
    expect(await latestCompactionOfSession(testDb.db, 'records-co', 'other')).toBeUndefined();
  });
});
