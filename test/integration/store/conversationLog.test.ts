// The conversation log on the real PostgreSQL (DESIGN.md §3–§4, issue #9 §1 and §7): conversation records with
// running totals and versions, appends with per-conversation idempotency keys (duplicate = no-op, another message
// under a used key = refused, nothing written), lossless storage of content PostgreSQL's text and jsonb cannot
// hold, commits that keep what was appended meanwhile, and the workflow's published state.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { normalizeCompressorState, quietRulesOf } from '../../../engine/index.js';
import type { ChatMessage } from '../../../engine/types.js';
import { commitInPlace, commitRotation } from '../../../infra/db/compactionCommit/index.js';
import { createCompactionRecord } from '../../../infra/db/compactions.js';
import { appendToConversation } from '../../../infra/db/conversationAppend.js';
import { createConversation, getConversation, recordApplied, waitApplied } from '../../../infra/db/conversations.js';
import { listMessages, loadTranscript } from '../../../infra/db/messages.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import { IdempotencyConflictError } from '../../../infra/db/storeErrors.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant, setTenantPolicy } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import {
  assistant,
  newConversation as newConversationOf,
  statsFor,
  summaryText,
  toolCall,
  toolResult,
  uniqueId,
  user,
} from './storeFixtures.js';

let testDb: TestDatabase;
const TENANT = 'tenant-log';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await ensureTenant(testDb.db, { id: TENANT, name: TENANT });
});
afterAll(async () => {
  await testDb?.drop();
});

const newConversation = () => newConversationOf(testDb.db, TENANT);

const keyed = (messages: ChatMessage[], prefix: string) =>
  messages.map((message, i) => ({ message, idempotencyKey: `${prefix}:${i}` }));

/** Compaction #1 of the conversation over `rowIds`, committed in place with `output` (its summary at index 2). */
async function compactInPlace(
  conv: string,
  sessionId: string,
  rowIds: number[],
  output: ChatMessage[],
  trigger: 'manual' | 'post_response' = 'manual',
) {
  const compactionId = uniqueId('compact');
  await createCompactionRecord(testDb.db, TENANT, {
    id: compactionId,
    sessionId,
    conversationId: conv,
    seq: 1,
    trigger,
    inPlace: true,
  });
  return commitInPlace(testDb.db, TENANT, {
    sessionId,
    compactionId,
    expectedRowIds: rowIds,
    output,
    summaryIndex: 2,
    summaryBody: 's',
    fallbackUsed: false,
    stats: statsFor('s'),
  });
}

/** Compaction #1 of the conversation over `rowIds`, committed as a rotation with `output` (its summary first). */
async function compactByRotation(conv: string, oldSessionId: string, rowIds: number[], output: ChatMessage[]) {
  const compactionId = uniqueId('compact');
  await createCompactionRecord(testDb.db, TENANT, {
    id: compactionId,
    sessionId: oldSessionId,
    conversationId: conv,
    seq: 1,
    trigger: 'manual',
    inPlace: false,
  });
  return commitRotation(testDb.db, TENANT, {
    compactionId,
    oldSessionId,
    newSessionId: uniqueId('rotated'),
    expectedRowIds: rowIds,
    output,
    summaryIndex: 0,
    summaryBody: 'earlier',
    fallbackUsed: false,
    stats: statsFor('earlier'),
  });
}

describe('conversation records and appends', () => {
  it('create is idempotent; each fresh batch bumps version and batch_seq and adds to the totals', async () => {
    const conv = await newConversation();
    const again = await createConversation(testDb.db, TENANT, {
      id: conv,
      sessionId: 'other-session',
      model: 'other',
      provider: null,
      contextLength: null,
      source: 'cli',
      title: 'x',
    });
    expect(again.created).toBe(false);
    expect(again.conversation.model).toBe('acme-chat');

    const first = await appendToConversation(testDb.db, TENANT, conv, keyed([user('hello'), assistant('hi')], 'a'));
    expect(first.appended.map((r) => [r.position, r.role])).toEqual([
      [0, 'user'],
      [1, 'assistant'],
    ]);
    const tokens = first.appended.reduce((s, r) => s + r.tokenEstimate, 0);
    expect(first.totals).toEqual({ version: 1, batchSeq: 1, activeMessages: 2, activeTokens: tokens });
    const dup = await appendToConversation(testDb.db, TENANT, conv, keyed([user('hello'), assistant('hi')], 'a'));
    expect(dup.appended).toEqual([]);
    expect(dup.duplicates).toEqual(['a:0', 'a:1']);
    expect(dup.totals).toEqual(first.totals);
  });

  it('concurrent posts to one conversation are serialised: no deadlock, every batch once, contiguous, in lock order', async () => {
    const conv = await newConversation();
    const batches = Array.from({ length: 16 }, (_, b) =>
      keyed([user(`q${b}`), assistant(`a${b}`), user(`f${b}`)], `b${b}`),
    );
    // Sixteen posts at once, and four retries of some of them racing their first attempt.
    const results = await Promise.all(
      [...batches, batches[0], batches[5], batches[5], batches[15]].map((items) =>
        appendToConversation(testDb.db, TENANT, conv, items as NonNullable<typeof items>),
      ),
    );
    const fresh = results.filter((r) => r.appended.length > 0);
    expect(fresh).toHaveLength(16);
    expect(results.filter((r) => r.appended.length === 0).every((r) => r.duplicates.length === 3)).toBe(true);
    // Every batch is written whole by one transaction, which took the next batch number and the next positions.
    fresh.sort((x, y) => (x.totals?.batchSeq ?? 0) - (y.totals?.batchSeq ?? 0));
    expect(fresh.map((r) => r.totals?.batchSeq)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    fresh.forEach((r, i) => {
      expect(r.appended.map((m) => m.position)).toEqual([3 * i, 3 * i + 1, 3 * i + 2]);
    });
    const head = await getConversation(testDb.db, TENANT, conv);
    expect(head).toMatchObject({ batch_seq: 16, active_messages: 48 });
    const stored = (await listMessages(testDb.db, TENANT, head?.current_session_id as string)).map(
      (r) => r.message.content as string,
    );
    expect(stored).toHaveLength(48);
    // Contiguous and in each post's own order; no message twice.
    for (let i = 0; i < 48; i += 3) {
      const b = (stored[i] as string).slice(1);
      expect(stored.slice(i, i + 3)).toEqual([`q${b}`, `a${b}`, `f${b}`]);
    }
    expect(new Set(stored).size).toBe(48);
  });

  it('another message under a used key refuses the whole batch: 409 material, nothing written', async () => {
    const conv = await newConversation();
    await appendToConversation(testDb.db, TENANT, conv, keyed([user('original')], 'k'));
    const attempt = appendToConversation(testDb.db, TENANT, conv, [
      { message: user('fresh'), idempotencyKey: 'new-key' },
      { message: user('changed'), idempotencyKey: 'k:0' },
    ]);
    await expect(attempt).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(attempt).rejects.toThrow("messages[1].idempotencyKey 'k:0' was already used for a different message");
    const row = await getConversation(testDb.db, TENANT, conv);
    const transcript = await loadTranscript(testDb.db, TENANT, row!.current_session_id);
    expect(transcript.map((r) => r.message.content)).toEqual(['original']);
    expect(row!.batch_seq).toBe(1);
  });

  it('keys are unique per conversation: a key stored in an earlier session is still a duplicate', async () => {
    const conv = await newConversation();
    const before = await getConversation(testDb.db, TENANT, conv);
    const seed = [user('q1'), assistant('a1'), user('q2'), assistant('a2'), user('q3')];
    const appended = await appendToConversation(testDb.db, TENANT, conv, keyed(seed, 'seed'));
    const rotated = await compactByRotation(
      conv,
      before!.current_session_id,
      appended.appended.map((r) => r.id),
      [assistant(summaryText('earlier')), user('q3')],
    );
    expect((await getConversation(testDb.db, TENANT, conv))!.current_session_id).toBe(rotated.sessionId);
    const dup = await appendToConversation(testDb.db, TENANT, conv, keyed(seed, 'seed'));
    expect(dup.appended).toEqual([]);
    expect(dup.sessionId).toBe(rotated.sessionId);
  });

  it('`after`: stored only right after the newest keyed message, a rotation’s unkeyed copies between or not', async () => {
    const conv = await newConversation();
    const before = await getConversation(testDb.db, TENANT, conv);
    expect(before!.last_key).toBeNull();
    await appendToConversation(testDb.db, TENANT, conv, keyed([user('q1'), assistant('a1'), user('q2')], 'c'));
    expect((await getConversation(testDb.db, TENANT, conv))!.last_key).toBe('c:2');

    // Something else was stored after the message it follows: nothing is, not even partly.
    const stale = await appendToConversation(
      testDb.db,
      TENANT,
      conv,
      [{ message: assistant('late'), idempotencyKey: 'r:1' }],
      {
        after: 'c:1',
      },
    );
    expect(stale.stale).toBe(true);
    expect(stale.appended).toEqual([]);
    const rows = await loadTranscript(testDb.db, TENANT, before!.current_session_id);
    const rotated = await compactByRotation(
      conv,
      before!.current_session_id,
      rows.map((r) => r.id),
      [assistant(summaryText('earlier')), user('q2')],
    );
    // The rotation's copies carry no key: the newest keyed message is still q2's.
    expect((await getConversation(testDb.db, TENANT, conv))!.last_key).toBe('c:2');
    const placed = await appendToConversation(
      testDb.db,
      TENANT,
      conv,
      [{ message: assistant('a2'), idempotencyKey: 'r:3' }],
      {
        after: 'c:2',
      },
    );
    expect(placed.stale).toBeUndefined();
    expect(placed.appended).toHaveLength(1);
    // A duplicate is one whatever `after` says.
    const again = await appendToConversation(
      testDb.db,
      TENANT,
      conv,
      [{ message: assistant('a2'), idempotencyKey: 'r:3' }],
      {
        after: 'c:0',
      },
    );
    expect([again.stale, again.duplicates]).toEqual([undefined, ['r:3']]);
    const transcript = await loadTranscript(testDb.db, TENANT, rotated.sessionId);
    expect(transcript.map((r) => r.message.content)).toEqual([summaryText('earlier'), 'q2', 'a2']);
    expect((await getConversation(testDb.db, TENANT, conv))!.last_key).toBe('r:3');
  });
});

describe('lossless storage of content PostgreSQL cannot hold', () => {
  const hostile: ChatMessage[] = [
    { role: 'user', content: 'binary\u0000output \uD800 lone high, \uDC00 lone low', name: 'n\u0000ame' },
    {
      ...toolCall('call\u0000id', 'read\u0000file', '{"path":"logo\\u0000.png"}'),
      ['x-extra\u0000key' as string]: { nested: ['\u0000', '\uDBFF'], n: 1e300 },
    } as ChatMessage,
    toolResult('call\u0000id', '\u0089PNG\r\n\u001a\n\u0000\u0000\u0000\rIHDR', 'read\u0000file'),
    { role: 'assistant', content: [{ type: 'text', text: 'parts \u0000 too' }] },
  ];

  it('every message reads back exactly as sent; search still finds its readable text', async () => {
    const conv = await newConversation();
    const result = await appendToConversation(testDb.db, TENANT, conv, keyed(hostile, 'h'));
    expect(result.appended).toHaveLength(hostile.length);
    const transcript = await loadTranscript(testDb.db, TENANT, result.sessionId);
    expect(transcript.map((r) => r.message)).toEqual(hostile);
    // The same messages again are duplicates, not conflicts: their identity survives storage.
    const again = await appendToConversation(testDb.db, TENANT, conv, keyed(hostile, 'h'));
    expect(again.duplicates).toHaveLength(hostile.length);
    const raw = await withTenant(testDb.db, TENANT, (tx) =>
      tx.selectFrom('messages').select(['raw_message', 'content']).where('session_id', '=', result.sessionId).execute(),
    );
    expect(raw.every((r) => r.raw_message !== null)).toBe(true);
    expect(raw[0]!.content).toBe('binary\uFFFDoutput \uFFFD lone high, \uFFFD lone low');
    const hits = await searchMessages(testDb.db, TENANT, 'binary');
    expect(hits.map((h) => h.id)).toEqual([result.appended[0]!.id]);
  });

  it('an in-place commit carries such rows unchanged and keeps the rows appended since, after the output', async () => {
    const conv = await newConversation();
    const head = [user('start'), assistant('ok')];
    const stored = await appendToConversation(testDb.db, TENANT, conv, keyed([...head, ...hostile], 'c'));
    const late = await appendToConversation(testDb.db, TENANT, conv, keyed([user('late \u0000 question')], 'late'));
    const output = [...head, assistant(summaryText('s')), hostile[3]!];
    const ids = stored.appended.map((r) => r.id);
    const outcome = await compactInPlace(conv, stored.sessionId, ids, output);
    const transcript = await loadTranscript(testDb.db, TENANT, stored.sessionId);
    expect(transcript.map((r) => r.message)).toEqual([...output, user('late \u0000 question')]);
    expect(outcome.keptSinceRowIds).toEqual([late.appended[0]!.id]);
    const totals = await getConversation(testDb.db, TENANT, conv);
    expect(outcome.totals).toMatchObject({ activeMessages: 5, version: late.totals!.version + 1 });
    expect(totals!.active_messages).toBe(5);
    expect(totals!.active_tokens).toBe(transcript.reduce((s, r) => s + r.tokenEstimate, 0));
  });

  it('a rotation moves the rows appended since into the new session, in order', async () => {
    const conv = await newConversation();
    const seed = [user('q1'), assistant('a1'), user('q2'), assistant('a2'), user('q3')];
    const stored = await appendToConversation(testDb.db, TENANT, conv, keyed(seed, 'r'));
    const late = await appendToConversation(testDb.db, TENANT, conv, keyed([assistant('a3'), user('q4')], 'late'));
    const outcome = await compactByRotation(
      conv,
      stored.sessionId,
      stored.appended.map((r) => r.id),
      [assistant(summaryText('earlier')), user('q3')],
    );
    const transcript = await loadTranscript(testDb.db, TENANT, outcome.sessionId);
    expect(transcript.map((r) => r.message.content)).toEqual([summaryText('earlier'), 'q3', 'a3', 'q4']);
    expect(transcript.slice(2).map((r) => r.id)).toEqual(late.appended.map((r) => r.id));
    // The old session keeps exactly the rows it had when the compaction read it.
    const old = await listMessages(testDb.db, TENANT, stored.sessionId, { includeInactive: true });
    expect(old.map((r) => r.id)).toEqual(stored.appended.map((r) => r.id));
    expect((await getConversation(testDb.db, TENANT, conv))!.current_session_id).toBe(outcome.sessionId);
  });
});

describe('the workflow’s published state', () => {
  it('applied_seq never goes back; waitApplied returns once reached and null after its bound', async () => {
    const conv = await newConversation();
    await recordApplied(testDb.db, TENANT, conv, { appliedSeq: 3, state: { marker: 'three' } });
    await recordApplied(testDb.db, TENANT, conv, { appliedSeq: 2, state: { marker: 'stale' } });
    const row = await getConversation(testDb.db, TENANT, conv);
    expect(row).toMatchObject({ applied_seq: 3, state: { marker: 'three' } });
    expect(await waitApplied(testDb.db, TENANT, conv, 4, { timeoutMs: 150 })).toBeNull();
    const waiting = waitApplied(testDb.db, TENANT, conv, 4, { timeoutMs: 5_000 });
    await recordApplied(testDb.db, TENANT, conv, { appliedSeq: 4, state: { marker: 'four' } });
    expect((await waiting)?.state).toEqual({ marker: 'four' });
  });

  it('is written only while the tenant policy is at the version the status was computed with', async () => {
    const tenant = 'tenant-log-policy';
    await ensureTenant(testDb.db, { id: tenant, name: 'p' });
    const conv = uniqueId('conv');
    await createConversation(testDb.db, tenant, {
      id: conv,
      sessionId: uniqueId('s'),
      model: 'acme-chat',
      provider: null,
      contextLength: null,
      source: 'api',
      title: null,
    });
    const start = await recordApplied(testDb.db, tenant, conv, { appliedSeq: 1, state: { marker: 'one' } });
    expect(start).toEqual({ recorded: true, policyVersion: 0 });
    const version = (await setTenantPolicy(testDb.db, tenant, { compression: { threshold: 0.6 } })).version;
    expect(version).toBeGreaterThan(0);

    // Computed with the old policy: nothing written, the current version returned.
    const stale = await recordApplied(testDb.db, tenant, conv, {
      appliedSeq: 2,
      state: { marker: 'two' },
      policyVersion: 0,
    });
    expect(stale).toEqual({ recorded: false, policyVersion: version });
    expect(await getConversation(testDb.db, tenant, conv)).toMatchObject({ applied_seq: 1, state: { marker: 'one' } });

    const current = { appliedSeq: 2, state: { marker: 'two' }, policyVersion: version };
    expect(await recordApplied(testDb.db, tenant, conv, current)).toEqual({ recorded: true, policyVersion: version });
    expect(await getConversation(testDb.db, tenant, conv)).toMatchObject({ applied_seq: 2, state: { marker: 'two' } });
  });

  it('a compaction commit keeps current rules published to fold until its settlement; any other are voided', async () => {
    /** Rules published for the row's epoch (or one before), then a compaction committed: the epoch after it. */
    const epochAfterCommit = async (rules: { foldsAtSettle: boolean; stale?: boolean }) => {
      const conv = await newConversation();
      const stored = await appendToConversation(
        testDb.db,
        TENANT,
        conv,
        keyed([user('start'), assistant('ok'), user('more'), assistant('done')], 'r'),
      );
      const before = (await getConversation(testDb.db, TENANT, conv))!;
      const quietRules = quietRulesOf({
        epoch: Number(before.notify_epoch) - (rules.stale ? 1 : 0),
        enabled: true,
        contextLength: 200_000,
        thresholdTokens: 150_000,
        hardMessageLimit: 5_000,
        compressor: normalizeCompressorState({ lastPromptTokens: 160_000 }),
        readingBaseTokens: 0,
        compacting: true,
        foldsAtSettle: rules.foldsAtSettle,
        pausedAtFixedPoint: false,
        turnsQuiet: true,
        gatewayTurns: true,
      });
      await recordApplied(testDb.db, TENANT, conv, { appliedSeq: before.batch_seq, state: {}, quietRules });
      const output = [user('start'), assistant('ok'), assistant(summaryText('s')), assistant('done')];
      const ids = stored.appended.map((r) => r.id);
      const outcome = await compactInPlace(conv, stored.sessionId, ids, output, 'post_response');
      expect(outcome.totals?.version).toBe(before.version + 1);
      const after = (await getConversation(testDb.db, TENANT, conv))!;
      return Number(after.notify_epoch) - Number(before.notify_epoch);
    };
    expect(await epochAfterCommit({ foldsAtSettle: true })).toBe(0);
    expect(await epochAfterCommit({ foldsAtSettle: false })).toBe(1);
    expect(await epochAfterCommit({ foldsAtSettle: true, stale: true })).toBe(1);
  });

  it('another tenant sees no conversation record (row-level security)', async () => {
    const conv = await newConversation();
    await ensureTenant(testDb.db, { id: 'tenant-log-b', name: 'b' });
    expect(await getConversation(testDb.db, 'tenant-log-b', conv)).toBeUndefined();
    const visible = await withTenant(
      testDb.db,
      'tenant-log-b',
      async (tx) => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM conversations`.execute(tx)).rows[0]!.n,
    );
    expect(visible).toBe(0);
  });
});
