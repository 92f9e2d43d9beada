// What a chat turn's append reads in its own transaction (workers/gateway/batchAppend.ts): the turn as stored by an
// earlier attempt and the transcript the gateway goes to the model with. Both are queued (`pipelined`) and travel
// with the COMMIT, so the append stays two round trips. The transcript read is the kept reading plus the rows after
// it, or every active row when the reading is no longer valid.
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { appendToConversation } from '../../../infra/db/conversationAppend.js';
import { getConversation } from '../../../infra/db/conversations.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { recordTurn } from '../../../infra/db/turns.js';
import { appendAndDecide } from '../../../workers/gateway/batchAppend.js';
import { TranscriptCache } from '../../../workers/gateway/transcriptCache.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { countingWrites } from '../../support/harness/socketWrites.js';
import { assistant, newConversation, user } from '../store/storeFixtures.js';

let testDb: TestDatabase;
/** One connection, opened before anything is counted. */
let single: Kysely<Database>;
const T = 'turn-reads';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await ensureTenant(testDb.db, { id: T, name: T });
  single = createDb({ connectionString: testDb.url, maxConnections: 1 });
  await withTenant(single, T, async () => undefined);
});
afterAll(async () => {
  await single?.destroy();
  await testDb?.drop();
});

const contents = (rows: ReadonlyArray<{ message: { content?: unknown } }>) => rows.map((r) => r.message.content);

describe("a chat turn's append", () => {
  it('reads its turn with the COMMIT: two round trips, and a turn stored before comes back', async () => {
    const conv = await newConversation(single, T);
    const batch = { messages: [{ message: user('question'), idempotencyKey: 'q1' }] };
    const first = await countingWrites(() => appendAndDecide(single, T, conv, batch, { turnId: 'turn-1', loud: true }));
    expect(first.writes.length).toBe(2);
    expect(first.result.turn).toBeNull();
    expect(first.result.stored.seq).toBe(1);

    const head = await getConversation(single, T, conv);
    await recordTurn(single, T, {
      id: 'turn-1',
      sessionId: head!.current_session_id,
      conversationId: conv,
      model: 'acme-chat',
      provider: null,
      messageId: first.result.stored.incoming!.rowId,
      finishReason: 'stop',
      promptTokens: 10,
      completionTokens: 2,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      uncachedInputTokens: 10,
      cachingEnabled: false,
      afterCompactionId: null,
    });
    // The retried request: its batch is a duplicate, its turn as stored.
    const again = await countingWrites(() => appendAndDecide(single, T, conv, batch, { turnId: 'turn-1', loud: true }));
    expect(again.writes.length).toBe(2);
    expect(again.result.turn).toMatchObject({ id: 'turn-1', messageId: first.result.stored.incoming!.rowId });
  });

  it('reads the transcript with the COMMIT: every row first, then the kept reading and the rows after it', async () => {
    const conv = await newConversation(single, T);
    await appendToConversation(single, T, conv, [
      { message: user('q1'), idempotencyKey: 'q1' },
      { message: assistant('a1'), idempotencyKey: 'a1' },
    ]);
    const cache = new TranscriptCache();
    const read = async () => {
      const head = (await getConversation(single, T, conv))!;
      const { result, writes } = await countingWrites(async () => {
        const reading = await withTenant(single, T, (tx) => cache.queueRead(tx, T, head));
        return reading();
      });
      cache.keep(T, conv, result);
      return { writes, rows: result.rows };
    };
    const whole = await read();
    // The prelude, the read and the COMMIT in one flight.
    expect(whole.writes.length).toBe(1);
    expect(contents(whole.rows)).toEqual(['q1', 'a1']);

    await appendToConversation(single, T, conv, [{ message: user('q2'), idempotencyKey: 'q2' }]);
    const since = await read();
    expect(contents(since.rows)).toEqual(['q1', 'a1', 'q2']);
    // The kept rows are the same objects: only the row after them was read.
    expect(since.rows[0]).toBe(whole.rows[0]);
    const head = await getConversation(single, T, conv);
    expect(contents(await loadTranscript(single, T, head!.current_session_id))).toEqual(contents(since.rows));
    // Its estimate: the kept count plus the new row's, which is the whole transcript's.
    const estimate = since.rows.reduce((sum, row) => sum + row.tokenEstimate, 0);
    expect(estimate).toBeGreaterThan(0);
    expect(cache.size).toEqual({ transcripts: 1, tokens: estimate });
  });
});
