// Coalescing under load (issue #11 §2, DESIGN.md §3): the conversation workflow works off every pending notification
// in one step — each batch decided on in order, the state published once — instead of one activity per batch.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { activityRuns, settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { batch, newTenant } from './transcript.js';

let testDb: TestDatabase;
let stack: TestStack;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  // Every batch notified: coalescing is about notifications waiting in the history (quiet batches send none;
  // quietBatches.test.ts covers those).
  stack = await createTestStack({ db: testDb.db, summarizer: null, conversations: { notifyEveryBatch: true } });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

const MODEL = { model: 'test-model-200k', contextLength: 200_000 };

async function recordStateCalls(tenantId: string, conversationId: string): Promise<number> {
  const history = await settledHistory(
    stack.temporal.client.workflow.getHandle(conversationWorkflowId(tenantId, conversationId)),
  );
  return activityRuns(history).recordState ?? 0;
}

describe('pending notifications', () => {
  it('are decided on in order and published once, not once per batch', async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are terse.' }]), MODEL);
    const before = await stack.client.sync(t, conv);
    const publishedBefore = await recordStateCalls(t, conv);

    // Twenty batches accepted while no worker runs: their notifications wait in the workflow's history.
    await stack.stopWorker();
    for (let i = 0; i < 20; i++) {
      await stack.client.submit(
        t,
        conv,
        batch([
          { role: 'user', content: `question ${i}` },
          { role: 'assistant', content: `answer ${i}` },
        ]),
      );
    }
    await stack.startWorker();
    const after = await stack.client.sync(t, conv);

    expect(after.processedBatches).toBe(before.processedBatches + 20);
    expect(after.appliedSeq).toBe(after.batchSeq);
    expect(after.activeMessages).toBe(before.activeMessages + 40);
    // One step for the twenty (a second one at most, for a notification that arrived during the first).
    expect((await recordStateCalls(t, conv)) - publishedBefore).toBeLessThanOrEqual(2);
  });
});
