// Chat turns are idempotent under retry (issue #9 §2) on the real services, with the real `openai` client talking to
// the fake server: the same request twice — after it finished, while it still runs, or after the worker died between
// storing the reply and reporting it — calls the model once and returns the first reply; the transcript holds one.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { activityRuns, settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack, workerProcessFor } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, batch, keyed, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
let configYaml: string;
const KEYS = { FAKE_OPENAI_KEY: 'sk-openai' };
const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  configYaml = [
    'model: { default: gpt-test, provider: openai }',
    'providers:',
    `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
  ].join('\n');
  const llm = llmDepsFromConfig(parseConfigText(configYaml), KEYS, () => undefined);
  stack = await createTestStack({ db: testDb.db, activityDeps: llm });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});
beforeEach(() => {
  openai.requests.length = 0;
});

async function conversation(): Promise<{ t: string; conv: string }> {
  const t = await newTenant(testDb.db);
  const conv = randomUUID();
  await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are terse.' }]), GPT);
  return { t, conv };
}

async function liveRoles(t: string, conv: string): Promise<string[]> {
  const status = await stack.client.status(t, conv);
  return (await activeTranscript(testDb.db, t, status.sessionId)).map((r) => r.role);
}

async function turnRows(t: string): Promise<number> {
  return withTenant(testDb.db, t, async (tx) => (await tx.selectFrom('turns').select('id').execute()).length);
}

describe('a chat turn', () => {
  it("decides on its reply's own batch: applied when the turn returns, no wait for a missing notification", async () => {
    const { t, conv } = await conversation();
    openai.enqueue(reply('first'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'one?' }], 'g1') });
    // Read as the turn returns (no wait): the reply's batch was stored by the activity, not notified; the workflow
    // marked it applied itself. Without that, applied_seq stayed one behind until the 2 s gap wait skipped it.
    const after = await stack.client.status(t, conv);
    expect(after.appliedSeq).toBe(after.batchSeq);
    openai.enqueue(reply('second'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'g2') });
    const again = await stack.client.status(t, conv);
    expect(again.batchSeq).toBe(after.batchSeq + 2);
    expect(again.appliedSeq).toBe(again.batchSeq);
    // The gap wait is a timer in the workflow: it never started.
    const history = await settledHistory(stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv)));
    expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toEqual([]);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
  });
});

describe('a chat turn in the workflow', () => {
  it('calls the model inside the workflow task that takes the turn, and answers before the compaction it starts has', async () => {
    const { t, conv } = await conversation();
    // Enough history outside the protected head and tail for a compaction to have a window.
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)), GPT);
    // A reading over the in-loop threshold (150,000 here) and under the hygiene one (85 %): a background compaction.
    openai.enqueue(
      reply('that was long', { usage: { prompt_tokens: 160_000, completion_tokens: 10, total_tokens: 160_010 } }),
    );
    openai.enqueue(reply('## Goal\nAnswer the long question.\n## Progress\n### Done\n- read the modules'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'long?' }], 'w1') });
    expect(turn.reply.content).toBe('that was long');
    await stack.client.settled(t, conv);
    const history = await settledHistory(stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv)));
    const events = history.events ?? [];
    // A local activity (patch local-respond): a marker, no activity task.
    expect(activityRuns(history).respond).toBe(1);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'respond')).toEqual([]);
    // The update is answered in the task that initiates the child, before the server confirms its start (patch
    // background-start-unawaited).
    const completed = events.findIndex((e) => e.workflowExecutionUpdateCompletedEventAttributes);
    const childStarted = events.findIndex((e) => e.childWorkflowExecutionStartedEventAttributes);
    expect(events.findIndex((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toBeGreaterThan(-1);
    expect(completed).toBeGreaterThan(-1);
    expect(childStarted).toBeGreaterThan(completed);
  });
});

describe('a retried chat turn', () => {
  it('after it finished: the first reply, no second model call', async () => {
    const { t, conv } = await conversation();
    openai.enqueue(reply('the answer is 42'));
    const messages = keyed([{ role: 'user', content: 'what is the answer?' }], 'q1');
    const first = await stack.client.chatTurn(t, conv, { messages });
    const second = await stack.client.chatTurn(t, conv, { messages });
    expect(openai.chatRequests()).toHaveLength(1);
    expect(second.reply).toEqual(first.reply);
    expect(second.replyMessageId).toBe(first.replyMessageId);
    expect(second.turnId).toBe(first.turnId);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant']);
    expect(await turnRows(t)).toBe(1);
  });

  it('while the first is still running: both get the one reply', async () => {
    const { t, conv } = await conversation();
    openai.enqueue(reply('slow but single', { delayMs: 1_500 }));
    const messages = keyed([{ role: 'user', content: 'take your time' }], 'q2');
    const [a, b] = await Promise.all([
      stack.client.chatTurn(t, conv, { messages }),
      stack.client.chatTurn(t, conv, { messages }),
    ]);
    expect(openai.chatRequests()).toHaveLength(1);
    expect(a.replyMessageId).toBe(b.replyMessageId);
    expect(a.reply.content).toBe('slow but single');
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant']);
  });

  it('after the worker died once the reply was stored, before Temporal heard of it', async () => {
    const { t, conv } = await conversation();
    const proc = await workerProcessFor(stack, testDb.url, {
      PAUSE_AFTER: 'respond',
      CONFIG_YAML: configYaml,
      ...KEYS,
    });
    try {
      await proc.waitFor('READY');
      openai.enqueue(reply('stored before the crash'));
      const messages = keyed([{ role: 'user', content: 'survive this' }], 'q3');
      const pending = stack.client.chatTurn(t, conv, { messages });
      pending.catch(() => undefined);
      await proc.waitFor('PAUSED respond');
      // The reply and its turn record are stored together (one transaction) before the kill.
      expect(await turnRows(t)).toBe(1);
      expect(await proc.kill()).toBe('SIGKILL');
      await stack.startWorker();
      const result = await pending;
      expect(result.reply.content).toBe('stored before the crash');
      expect(openai.chatRequests()).toHaveLength(1);
      expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant']);
      // A client retry of the same request afterwards: the same reply again, still one model call.
      const retried = await stack.client.chatTurn(t, conv, { messages });
      expect(retried.replyMessageId).toBe(result.replyMessageId);
      expect(openai.chatRequests()).toHaveLength(1);
    } finally {
      await proc.kill();
      await stack.startWorker();
    }
  });
});
