// The compaction phases with the worker's window cache (issue #11 §5) on the real PostgreSQL: align creates the
// record and keeps its input, prune/summarize/reassemble take it from memory, and the commit is the same as when
// every phase reads the window from the store. Pins are read when reassemble needs them, not from the cache.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCompactionActivities, WindowCache } from '../../../activities/compaction/index.js';
import { DEFAULT_HOST_POLICY } from '../../../engine/config.js';
import type { ChatMessage } from '../../../engine/types.js';
import { getCompaction } from '../../../infra/db/compactions.js';
import { loadTranscript, setMessagePinned } from '../../../infra/db/messages.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { type SeededSession, seedSession, uniqueId } from '../store/storeFixtures.js';
import { agentTranscript } from '../workflows/transcript.js';

let testDb: TestDatabase;
const TENANT = 'tenant-window-cache';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

/** Counts the lookups that found the window. */
class CountingCache extends WindowCache {
  hits = 0;
  override get(...args: Parameters<WindowCache['get']>) {
    const found = super.get(...args);
    if (found) this.hits += 1;
    return found;
  }
}

const LIMITS = {
  protectFirstN: 1,
  protectLastN: 4,
  minTailUserMessages: 1,
  tailTokenBudget: 500,
  contextLength: 200_000,
};

/**
 * One compaction through the four phase activities; `between` runs after align. `forget`: the entry is dropped right
 * after align, so every later phase reads the store (another worker, a restarted one).
 */
async function compact(seeded: SeededSession, options: { forget: boolean; between?: () => Promise<void> }) {
  const cache = new CountingCache();
  const acts = createCompactionActivities({
    db: testDb.db,
    summarizer: null,
    windowCache: cache,
    baseHostPolicy: { ...DEFAULT_HOST_POLICY, rehydratePinned: true },
  });
  const ref = { tenantId: seeded.tenantId, compactionId: uniqueId('compact') };
  const aligned = await acts.align({
    ...ref,
    ...LIMITS,
    begin: {
      sessionId: seeded.sessionId,
      conversationId: seeded.conversationId,
      seq: 1,
      trigger: 'manual',
      inPlace: true,
      focusTopic: null,
    },
  });
  expect(aligned.noop).toBe(false);
  expect(cache.size).toBe(1);
  if (options.forget) cache.delete(ref.tenantId, ref.compactionId);
  await options.between?.();
  await acts.prune(ref);
  await acts.summarize(ref);
  const result = await acts.reassemble({
    ...ref,
    fallbackFailureClass: null,
    requiredGain: null,
    newSessionId: null,
    platform: 'cli',
  });
  expect(result.status).toBe('committed');
  expect(cache.size).toBe(0);
  const record = await getCompaction(testDb.db, ref.tenantId, ref.compactionId);
  return { cache, record, transcript: await loadTranscript(testDb.db, seeded.tenantId, seeded.sessionId) };
}

/** The transcript as JSON with the conversation's id (the summary's archive pointer names it) left out. */
const shape = (seeded: SeededSession, rows: { message: ChatMessage; pinned: boolean }[]) =>
  JSON.stringify(rows.map((r) => [r.message, r.pinned])).replaceAll(seeded.conversationId, '<conversation>');

describe('window cache of the compaction phases', () => {
  it('serves prune, summarize and reassemble from memory; the commit equals the one read from the store', async () => {
    const messages = agentTranscript(8, { tag: 'cache' });
    const cached = await seedSession(testDb.db, TENANT, messages);
    const stored = await seedSession(testDb.db, TENANT, messages);
    // An operator pins a summarised request after align: reassemble reads pins now, with or without the cache.
    const pinAfterAlign = (seeded: SeededSession) => async () => {
      expect(await setMessagePinned(testDb.db, TENANT, seeded.conversationId, seeded.rows[5]!.id, true)).not.toBeNull();
    };

    const fromMemory = await compact(cached, { forget: false, between: pinAfterAlign(cached) });
    const fromStore = await compact(stored, { forget: true, between: pinAfterAlign(stored) });

    expect(fromMemory.cache.hits).toBe(3);
    expect(fromStore.cache.hits).toBe(0);
    expect(fromMemory.record?.plan?.inputRowIds).toEqual(cached.rows.map((r) => r.id));
    expect(fromMemory.record?.prune_result).toEqual(fromStore.record?.prune_result);
    expect(fromMemory.record?.summary_body).toBeTruthy();
    expect(shape(cached, fromMemory.transcript)).toBe(shape(stored, fromStore.transcript));
    // The pinned request came back right after the summary (SPEC §19 rehydrate_pinned).
    const summaryAt = fromMemory.transcript.findIndex((r) => r.summaryBody !== null);
    expect(summaryAt).toBeGreaterThan(0);
    expect(fromMemory.transcript[summaryAt + 1]).toMatchObject({ message: messages[5], pinned: true });
  });

  it('a retried align finds the record and the plan it stored', async () => {
    const seeded = await seedSession(testDb.db, TENANT, agentTranscript(6, { tag: 'retry' }));
    const acts = createCompactionActivities({ db: testDb.db, summarizer: null });
    const ref = { tenantId: seeded.tenantId, compactionId: uniqueId('compact') };
    const begin = {
      sessionId: seeded.sessionId,
      conversationId: seeded.conversationId,
      seq: 1,
      trigger: 'manual' as const,
      inPlace: true,
      focusTopic: 'tests',
    };
    const first = await acts.align({ ...ref, ...LIMITS, begin });
    const again = await acts.align({ ...ref, ...LIMITS, begin: { ...begin, focusTopic: 'other' } });
    expect(again).toEqual(first);
    const record = await getCompaction(testDb.db, ref.tenantId, ref.compactionId);
    expect(record?.focus_topic).toBe('tests');
    expect(record?.trigger).toBe('manual');
  });
});
