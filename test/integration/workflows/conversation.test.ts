// The conversation and compaction workflows end to end on the real Temporal dev server and real PostgreSQL.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SUMMARY_PREFIX, type Summarizer } from '../../../engine/index.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import {
  activeTranscript,
  agentTranscript,
  allRows,
  batch,
  compactionsOf,
  eventsOf,
  expectTranscriptInvariants,
  keyed,
  newTenant,
  searchArchived,
} from './transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
const goodSummarizer: Summarizer = async (req) =>
  `## Goal\nFix the failing tests (${req.turnCount} turns).\n## Progress\n### Done\n- inspected modules`;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer: goodSummarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

const tenant = (policy: Record<string, unknown> = {}) => newTenant(testDb.db, policy);

const MODEL = { model: 'test-model-200k', contextLength: 200_000 };

describe('manual compaction, in place', () => {
  it('summarises the window and keeps every original message retrievable and searchable', async () => {
    const t = await tenant();
    const conv = randomUUID();
    const messages = agentTranscript(10, { tag: 'kubernetes' });
    await stack.client.submit(t, conv, batch(messages), MODEL);
    const before = await stack.client.sync(t, conv);
    expect(before.activeMessages).toBe(messages.length);

    const result = await stack.client.compact(t, conv, { focusTopic: 'tests' });
    expect(result.status).toBe('committed');
    expect(result.trigger).toBe('manual');
    expect(result.stats?.droppedCount).toBeGreaterThan(0);

    const status = await stack.client.status(t, conv);
    expect(status.compressionCount).toBe(1);
    const rows = await allRows(testDb.db, t);
    // Nothing deleted: every original row still exists, either live (carried) or archived (summarised/replaced).
    const originals = rows.slice(0, messages.length);
    expect(originals.map((r) => r.content)).toEqual(messages.map((m) => m.content));
    for (const r of originals) expect(r.active !== r.compacted).toBe(true);
    expect(originals.filter((r) => r.compacted).length).toBeGreaterThanOrEqual(result.stats!.droppedCount);
    const live = await activeTranscript(testDb.db, t, status.sessionId);
    const transcript = await loadTranscript(testDb.db, t, status.sessionId);
    expectTranscriptInvariants(
      live,
      transcript.map((r) => r.message),
    );
    expect(live.length).toBe(status.activeMessages);
    expect(transcript.some((r) => r.message.content?.toString().startsWith(SUMMARY_PREFIX))).toBe(true);
    // An archived (compacted) message is still found by search.
    const hits = await searchArchived(testDb.db, t, 'kubernetes 2:');
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => h.compacted && !h.active)).toBe(true);
    // Exactly one session:compress event.
    const events = await eventsOf(testDb.db, t);
    expect(events.map((e) => e.type)).toEqual(['session:compress']);
    expect(events[0]!.payload).toMatchObject({ in_place: true, old_session_id: '', compression_count: 1 });
  });

  it('answers a too-short conversation with the no-op notice', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(1)), MODEL);
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('noop');
    expect(result.notice).toBe('Nothing to compress: the conversation is too short.');
    expect(await compactionsOf(testDb.db, t)).toMatchObject([{ status: 'noop' }]);
  });
});

describe('idempotency keys', () => {
  it('ignores a duplicate key, within a batch sequence and across batches', async () => {
    const t = await tenant();
    const conv = randomUUID();
    const items = keyed([{ role: 'user', content: 'hello once' }], 'fixed');
    await stack.client.submit(t, conv, { messages: items }, MODEL);
    await stack.client.submit(t, conv, { messages: items }, MODEL);
    await stack.client.submit(
      t,
      conv,
      { messages: [...items, ...keyed([{ role: 'assistant', content: 'hi' }], 'b')] },
      MODEL,
    );
    const status = await stack.client.sync(t, conv);
    expect(status.activeMessages).toBe(2);
    const rows = await allRows(testDb.db, t);
    expect(rows.map((r) => r.content)).toEqual(['hello once', 'hi']);
  });

  it('refuses a malformed batch before sending, naming the field', async () => {
    const t = await tenant();
    await expect(
      stack.client.submit(
        t,
        randomUUID(),
        { messages: [{ message: { role: 'robot', content: 'x' }, idempotencyKey: 'k' }] } as never,
        MODEL,
      ),
    ).rejects.toThrow('messages[0].message.role must be one of system, user, assistant, tool');
  });
});
