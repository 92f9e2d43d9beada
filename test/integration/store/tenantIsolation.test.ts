// Row-level security through the store functions: a tenant can neither read nor write another tenant's session.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { commitInPlace, commitRotation, replaceReplayedSummary } from '../../../infra/db/compactionCommit.js';
import { getCompaction, listCompactions, updateCompaction } from '../../../infra/db/compactions.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { listMessages, loadRowsByIds, loadTranscript } from '../../../infra/db/messages.js';
import { createSession, getSession, newestDescendant } from '../../../infra/db/sessions.js';
import { CompactionNotFoundError, SessionNotFoundError } from '../../../infra/db/storeErrors.js';
import { ensureTenant, getTenantMarker, setTenantMarker } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../harness/db.js';
import {
  assistant,
  newCompaction,
  type SeededSession,
  seedSession,
  statsFor,
  summaryText,
  user,
} from './storeFixtures.js';

let testDb: TestDatabase;
let victim: SeededSession;
let victimCompaction: string;
const A = 'tenant-a';
const B = 'tenant-b';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  victim = await seedSession(testDb.db, A, [user('secret plan'), assistant('noted'), user('go')]);
  victimCompaction = await newCompaction(testDb.db, victim);
  await ensureTenant(testDb.db, { id: B, name: 'B' });
});
afterAll(async () => {
  await testDb?.drop();
});

const stolenCommit = () => ({
  compactionId: victimCompaction,
  expectedRowIds: victim.rows.map((r) => r.id),
  output: [assistant(summaryText('pwned')), user('go')],
  summaryIndex: 0,
  summaryBody: 'pwned',
  fallbackUsed: true,
  stats: statsFor('pwned', true),
});

describe('tenant isolation of the session store', () => {
  it("tenant B cannot read tenant A's session, rows or compactions", async () => {
    expect(await getSession(testDb.db, B, victim.sessionId)).toBeUndefined();
    expect(await loadTranscript(testDb.db, B, victim.sessionId)).toEqual([]);
    expect(await listMessages(testDb.db, B, victim.sessionId, { includeInactive: true })).toEqual([]);
    expect(
      await loadRowsByIds(
        testDb.db,
        B,
        victim.rows.map((r) => r.id),
      ),
    ).toEqual([]);
    expect(await getCompaction(testDb.db, B, victimCompaction)).toBeUndefined();
    expect(await listCompactions(testDb.db, B)).toEqual([]);
    await expect(newestDescendant(testDb.db, B, victim.sessionId)).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it("tenant B cannot append to, commit into or rotate tenant A's session", async () => {
    await expect(
      appendMessages(testDb.db, B, victim.sessionId, [{ message: user('injected'), idempotencyKey: 'x' }]),
    ).rejects.toBeInstanceOf(SessionNotFoundError);
    // The commit reads the compaction record first (lock order conversation → session → compaction): not found.
    await expect(
      commitInPlace(testDb.db, B, { ...stolenCommit(), sessionId: victim.sessionId }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    await expect(
      commitRotation(testDb.db, B, { ...stolenCommit(), oldSessionId: victim.sessionId, newSessionId: 'b-new' }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    expect(await updateCompaction(testDb.db, B, victimCompaction, { status: 'failed' })).toBeUndefined();
    expect((await loadTranscript(testDb.db, A, victim.sessionId)).map((r) => r.message.content)).toEqual([
      'secret plan',
      'noted',
      'go',
    ]);
    expect((await getCompaction(testDb.db, A, victimCompaction))?.status).toBe('pending');
  });

  it("a session of B with the same id as A's does not open A's compaction to B", async () => {
    await createSession(testDb.db, B, { id: victim.sessionId, conversationId: 'b-conv' });
    await appendMessages(testDb.db, B, victim.sessionId, [{ message: user('b message'), idempotencyKey: 'b1' }]);
    const bRows = await loadTranscript(testDb.db, B, victim.sessionId);
    expect(bRows.map((r) => r.message.content)).toEqual(['b message']);
    await expect(
      commitInPlace(testDb.db, B, {
        ...stolenCommit(),
        sessionId: victim.sessionId,
        expectedRowIds: bRows.map((r) => r.id),
      }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    await expect(
      replaceReplayedSummary(testDb.db, B, {
        compactionId: victimCompaction,
        newSummaryText: 'x',
        newSummaryBody: 'x',
      }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    expect((await loadTranscript(testDb.db, A, victim.sessionId)).map((r) => r.message.content)).toEqual([
      'secret plan',
      'noted',
      'go',
    ]);
  });

  it('tenant markers are per tenant', async () => {
    await setTenantMarker(testDb.db, A, 'codex_gpt55_autoraise_notice', '231200');
    expect(await getTenantMarker(testDb.db, A, 'codex_gpt55_autoraise_notice')).toBe('231200');
    expect(await getTenantMarker(testDb.db, B, 'codex_gpt55_autoraise_notice')).toBeUndefined();
  });
});
