// Quiet batches on the real stack (issue #11 §2, engine/quietBatches.ts, migration 0009): a batch that cannot change
// a decision is committed and applied by the gateway alone — no signal, no workflow task, no activity — and its
// effect reaches the workflow folded into the next notification; a batch that could decide is notified at once.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { setTenantPolicy } from '../../../infra/db/tenants.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { activityRuns, settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { fixedSummarizer } from '../../support/harness/fixedSummarizer.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { agentTranscript, batch, newTenant } from './transcript.js';

let testDb: TestDatabase;
let stack: TestStack;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer: fixedSummarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

const MODEL = { model: 'test-model-200k', contextLength: 200_000 };

/** What the conversation's workflow history holds so far: signals, and the state publications. */
async function historyCounts(tenantId: string, conversationId: string) {
  const history = await settledHistory(
    stack.temporal.client.workflow.getHandle(conversationWorkflowId(tenantId, conversationId)),
  );
  const events = history.events ?? [];
  return {
    signals: events.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
    publications: activityRuns(history).recordState ?? 0,
  };
}

const exchange = (i: number, prompt: number) =>
  batch(
    [
      { role: 'user', content: `question ${i}` },
      { role: 'assistant', content: `answer ${i}` },
    ],
    { prompt_tokens: prompt, completion_tokens: 10, total_tokens: prompt + 10 },
  );

describe('quiet batches', () => {
  it('are applied at commit without Temporal; the next notification carries them to the workflow', async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(6, { tag: 'seed' })), MODEL);
    const opened = await stack.client.sync(t, conv);
    const before = await historyCounts(t, conv);

    // Ten exchanges far below the threshold: each is decided on at commit (applied at once, no wait).
    for (let i = 0; i < 10; i++) {
      await stack.client.submit(t, conv, exchange(i, 5_000 + i * 100));
      const status = await stack.client.status(t, conv);
      expect(status.appliedSeq).toBe(status.batchSeq);
      expect(status.lastPromptTokens).toBe(5_000 + i * 100);
    }
    expect(await historyCounts(t, conv)).toEqual(before);
    const quiet = await stack.client.status(t, conv);
    expect(quiet.processedBatches).toBe(opened.processedBatches + 10);
    expect(quiet.activeMessages).toBe(opened.activeMessages + 20);
    expect(quiet.contextTokens).toBeGreaterThanOrEqual(5_900);

    // A reading over the threshold: notified once, with the ten folded before it; the workflow compacts.
    await stack.client.submit(t, conv, exchange(10, quiet.thresholdTokens + 1_000));
    const decided = await stack.client.settled(t, conv);
    const after = await historyCounts(t, conv);
    expect(after.signals).toBe(before.signals + 1);
    expect(decided.processedBatches).toBe(opened.processedBatches + 11);
    expect(decided.lastCompaction).toMatchObject({ trigger: 'post_response', status: 'committed' });
    expect(decided.compressionCount).toBe(1);

    // The commit voided the rules, and the background compaction's settlement opened a new epoch and published
    // rules for it: the next batch is quiet (its reading, the verdict on the compaction, is below the threshold),
    // and so is the one after it. The next notification carries both.
    await stack.client.submit(t, conv, exchange(11, 4_000));
    await stack.client.submit(t, conv, exchange(12, 4_100));
    expect((await historyCounts(t, conv)).signals).toBe(after.signals);
    const quietAfter = await stack.client.status(t, conv);
    expect(quietAfter.appliedSeq).toBe(quietAfter.batchSeq);
    expect(quietAfter.processedBatches).toBe(opened.processedBatches + 13);
    expect(quietAfter.lastPromptTokens).toBe(4_100);
    await stack.client.submit(t, conv, exchange(13, quietAfter.thresholdTokens + 500));
    const settled = await stack.client.settled(t, conv);
    expect((await historyCounts(t, conv)).signals).toBe(after.signals + 1);
    expect(settled.processedBatches).toBe(opened.processedBatches + 14);
    // 4,000 was the verdict (below the threshold: no strike); the crossing reading compacts again.
    expect(settled.ineffectiveStrikes).toBe(0);
    expect(settled.compressionCount).toBe(2);
  });

  it('a policy change, a manual compaction and a model switch are notified with the fold', async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8, { tag: 'seed' })), MODEL);
    const opened = await stack.client.sync(t, conv);
    await stack.client.submit(t, conv, exchange(0, 6_000));
    const base = await historyCounts(t, conv);

    // The tenant lowers the threshold: rules computed with the old policy are void, the next batch is notified,
    // and the workflow takes the new policy over with its publication; a reading over the new threshold is then
    // notified and compacts.
    await setTenantPolicy(testDb.db, t, { threshold: 0.1, small_context_floor: 0.1 });
    await stack.client.submit(t, conv, exchange(1, 6_100));
    const lowered = await stack.client.sync(t, conv);
    expect((await historyCounts(t, conv)).signals).toBe(base.signals + 1);
    expect(lowered.thresholdTokens).toBeLessThan(opened.thresholdTokens);
    await stack.client.submit(t, conv, exchange(2, lowered.thresholdTokens + 1_000));
    const crossed = await stack.client.settled(t, conv);
    expect((await historyCounts(t, conv)).signals).toBe(base.signals + 2);
    expect(crossed.lastCompaction).toMatchObject({ trigger: 'post_response' });
    const count = crossed.compressionCount;

    // Quiet batches, then a manual compaction: it carries them (the workflow applies them first). The first batch
    // after the commit is notified (the commit voided the rules); once it is decided, the next ones are quiet.
    await stack.client.submit(t, conv, exchange(3, 3_000));
    await stack.client.sync(t, conv);
    await stack.client.submit(t, conv, exchange(4, 3_000));
    await stack.client.submit(t, conv, exchange(5, 3_100));
    const folded = await stack.client.status(t, conv);
    expect(folded.appliedSeq).toBe(folded.batchSeq);
    const manual = await stack.client.compact(t, conv);
    expect(manual.status).toBe('committed');
    const compacted = await stack.client.sync(t, conv);
    expect(compacted.compressionCount).toBe(count + 1);
    expect(compacted.processedBatches).toBe(folded.processedBatches);

    // A model switch applies the fold too; the conversation keeps its counts.
    await stack.client.submit(t, conv, exchange(6, 2_000));
    await stack.client.sync(t, conv);
    const signals = (await historyCounts(t, conv)).signals;
    await stack.client.submit(t, conv, exchange(7, 2_100));
    await stack.client.submit(t, conv, exchange(8, 2_200));
    expect((await historyCounts(t, conv)).signals).toBe(signals);
    const beforeSwitch = await stack.client.status(t, conv);
    expect(beforeSwitch.lastPromptTokens).toBe(2_200);
    const switched = await stack.client.switchModel(t, conv, { model: 'test-model-400k', contextLength: 400_000 });
    expect(switched.contextLength).toBe(400_000);
    const published = await stack.client.sync(t, conv);
    expect(published.processedBatches).toBe(beforeSwitch.processedBatches);
    expect(published.appliedSeq).toBe(published.batchSeq);
    // The workflow itself holds the folded reading now (its own snapshot, not the gateway's overlay).
    const query = await stack.temporal.client.workflow
      .getHandle(conversationWorkflowId(t, conv))
      .query<{ lastPromptTokens: number; processedBatches: number }>('status');
    expect(query).toMatchObject({ lastPromptTokens: 2_200, processedBatches: beforeSwitch.processedBatches });
  });

  it('a new conversation has no workflow until one is needed; it opens with the batches folded before', async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.create(t, conv, MODEL);
    for (let i = 0; i < 4; i++) await stack.client.submit(t, conv, exchange(i, 5_000 + i * 100));
    const before = await stack.client.status(t, conv);
    expect(before).toMatchObject({ batchSeq: 4, appliedSeq: 4, published: false, lastPromptTokens: 5_300 });
    expect(before.thresholdTokens).toBeGreaterThan(0);
    const handle = stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv));
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    // A read of the prepared context needs nothing from it: nothing is due under the starting rules.
    expect(await stack.client.syncForRead(t, conv)).toMatchObject({ published: false, appliedSeq: 4 });
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    // A wait that must reflect every decision (a post with `wait`) starts the workflow; it applies the fold when it
    // opens.
    const synced = await stack.client.sync(t, conv);
    expect(synced).toMatchObject({ published: true, processedBatches: 4, lastPromptTokens: 5_300, appliedSeq: 4 });
    const query = await handle.query<{ lastPromptTokens: number; processedBatches: number }>('status');
    expect(query).toMatchObject({ lastPromptTokens: 5_300, processedBatches: 4 });
  });

  it("starting rules that are no longer the tenant's: a read of the prepared context starts the workflow", async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.create(t, conv, MODEL);
    await stack.client.submit(t, conv, exchange(0, 5_000));
    // As if the conversation had been created in the instant its tenant's policy changed (the rules it was given
    // come from the policy before): the batch was judged quiet by rules the tenant no longer has.
    await sql`UPDATE conversations SET quiet_rules = jsonb_set(quiet_rules, '{thresholdTokens}', '190000')
               WHERE tenant_id = ${t} AND id = ${conv}`.execute(testDb.db);
    expect(await stack.client.status(t, conv)).toMatchObject({ published: false, appliedSeq: 1 });
    const read = await stack.client.syncForRead(t, conv);
    expect(read).toMatchObject({ published: true, processedBatches: 1, lastPromptTokens: 5_000 });
    expect(read.thresholdTokens).toBeLessThan(190_000);
  });
});
