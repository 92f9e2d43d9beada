// Chat turns are idempotent under retry (issue #9 §2) on the real services, with the real `openai` client talking to
// the fake server: the same request twice — after it finished, while it still runs, or after the worker died between
// storing the reply and reporting it — calls the model once and returns the first reply; the transcript holds one.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { type RespondInput, respondDepsFrom } from '../../../activities/respond.js';
import { createTurnRunner, type TurnCall } from '../../../activities/turnRunner.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply, serverError, unauthorized } from '../../support/fakes/script.js';
import { activityRuns, settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack, workerProcessFor } from '../../support/harness/temporal.js';
import {
  activeTranscript,
  agentTranscript,
  allRows,
  batch,
  compactionsOf,
  keyed,
  newTenant,
} from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
let configYaml: string;
let llm: ReturnType<typeof llmDepsFromConfig>;
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
  llm = llmDepsFromConfig(parseConfigText(configYaml), KEYS, () => undefined);
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

async function until(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

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

describe('a quiet chat turn runs in the gateway (issue #11 §2)', () => {
  /** A conversation whose workflow published its rules (its first turn ran there: the starting rules allow none). */
  async function published(): Promise<{ t: string; conv: string; history: () => Promise<number> }> {
    const { t, conv } = await conversation();
    openai.enqueue(reply('first'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'one?' }], 'p1') });
    const handle = stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv));
    return { t, conv, history: async () => (await settledHistory(handle)).events?.length ?? 0 };
  }
  const usage = (prompt: number) => ({
    usage: { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 },
  });
  const sentContents = (i: number) => {
    const messages: Array<{ content: string }> = openai.chatRequests()[i]?.body.messages ?? [];
    return messages.map((m) => m.content);
  };

  it('with no workflow task: the model sees the stored transcript, the workflow takes the turn over later', async () => {
    const { t, conv, history } = await published();
    const before = await history();
    openai.enqueue(reply('second', usage(1_234)));
    const second = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'p2') });
    expect(second.reply.content).toBe('second');
    expect(sentContents(1)).toEqual(['You are terse.', 'one?', 'first', 'two?']);
    // Nothing reached Temporal: the workflow's history did not grow.
    expect(await history()).toBe(before);
    // Decided in the log: both batches applied, the reading and the turn counted in the status at once.
    const logged = await stack.client.status(t, conv);
    expect(logged.appliedSeq).toBe(logged.batchSeq);
    expect(second.status.appliedSeq).toBe(logged.batchSeq);
    expect(second.status.lastPromptTokens).toBe(1_234);
    expect(second.status.cache.turns).toBe(2);
    // The next notification (here a model switch to the same model) carries the turn: the workflow's own state
    // (the update's answer, not the log) counts it.
    const taken = await stack.client.switchModel(t, conv, { model: GPT.model });
    expect(taken.cache.turns).toBe(2);
    expect(taken.cache.lastTurn?.prompt_tokens).toBe(1_234);
    expect(taken.lastPromptTokens).toBe(1_234);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
  });

  it('keeps the transcript between turns: what others appended is read, a commit makes it read anew', async () => {
    const { t, conv } = await published();
    /** The contents the model got in its last request are the log's active transcript before the reply. */
    const sentIsTheLog = async () => {
      const status = await stack.client.status(t, conv);
      const log = (await activeTranscript(testDb.db, t, status.sessionId)).map((r) => r.content);
      expect(sentContents(openai.chatRequests().length - 1)).toEqual(log.slice(0, -1));
      return log;
    };
    const turn = async (content: string, key: string) => {
      openai.enqueue(reply(`re ${content}`, usage(1_000)));
      await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content }], key) });
    };
    await turn('two?', 'k2');
    await sentIsTheLog();
    // Another writer appends between two turns: the next one reads those rows after the kept ones.
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'aside' }]));
    await turn('three?', 'k3');
    expect((await sentIsTheLog()).slice(-4)).toEqual(['re two?', 'aside', 'three?', 're three?']);
    // A manual compaction rewrites the transcript; the turns after it see the summary, never the kept rows.
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)));
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- read the modules'));
    const compaction = await stack.client.compact(t, conv);
    expect(compaction.status).toBe('committed');
    await turn('four?', 'k4');
    const afterCommit = await sentIsTheLog();
    expect(afterCommit.some((content) => content?.includes('read the modules'))).toBe(true);
    await turn('five?', 'k5');
    expect((await sentIsTheLog()).slice(-4)).toEqual(['four?', 're four?', 'five?', 're five?']);
  });

  it('one at a time per conversation: a second turn sent meanwhile sees the first reply', async () => {
    const { t, conv } = await published();
    openai.enqueue(reply('slow', { delayMs: 800 }));
    openai.enqueue(reply('after slow'));
    const [a, b] = await Promise.all([
      stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'A?' }], 'c1') }),
      stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'B?' }], 'c2') }),
    ]);
    expect([a.reply.content, b.reply.content]).toEqual(['slow', 'after slow']);
    expect(sentContents(2)).toEqual(['You are terse.', 'one?', 'first', 'A?', 'slow', 'B?']);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });

  it('a reply over the threshold is notified: the workflow compacts in the background', async () => {
    const { t, conv, history } = await published();
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)));
    const before = await history();
    openai.enqueue(reply('that was long', usage(160_000)));
    openai.enqueue(reply('## Goal\nAnswer the long question.\n## Progress\n### Done\n- read the modules'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'long?' }], 'o1') });
    expect(turn.reply.content).toBe('that was long');
    expect(turn.compaction).toBeNull();
    const settled = await stack.client.settled(t, conv);
    expect(settled.compressionCount).toBe(1);
    expect(settled.lastCompaction?.trigger).toBe('post_response');
    expect(await history()).toBeGreaterThan(before);
    // The model ran once for the turn, in the gateway (the one respond marker is the first turn's), then for the
    // summary.
    const events = await settledHistory(stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv)));
    expect(activityRuns(events).respond).toBe(1);
    const last = openai.chatRequests().map((r) => (r.body.messages as Array<{ content: string }>).at(-1)?.content);
    expect(last.filter((content) => content === 'long?')).toHaveLength(1);
    expect(last.slice(2).every((content) => content?.startsWith('Write a structured handoff summary'))).toBe(true);
  });

  it('after a background compaction, quiet turns measure the cache recovery: on its record at once', async () => {
    const { t, conv, history } = await published();
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)));
    openai.enqueue(reply('that was long', usage(160_000)));
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- read the modules'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'long?' }], 'r1') });
    const settled = await stack.client.settled(t, conv);
    expect(settled.compressionCount).toBe(1);
    const compactionId = settled.lastCompaction?.compactionId as string;
    expect(settled.cache.watching).toMatchObject({ compactionId, turnsSince: 0, rewriteTokens: null });
    const before = await history();
    // The first turn after it re-writes the prefix (reads 25 %), the second reads 93 %: recovered after 2 turns.
    const cached = (prompt: number, read: number, write: number) => ({
      usage: {
        prompt_tokens: prompt,
        completion_tokens: 5,
        total_tokens: prompt + 5,
        prompt_tokens_details: { cached_tokens: read, cache_write_tokens: write },
      },
    });
    openai.enqueue(
      reply('not yet', cached(4_000, 1_000, 2_800)),
      reply('recovered', cached(4_200, 3_900, 100)),
      reply('and after', cached(4_300, 4_000, 50)),
    );
    for (const [i, content] of ['a?', 'b?', 'c?'].entries()) {
      await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content }], `r${i + 2}`) });
    }
    // Quiet turns: the workflow took no task for them, yet the measurement is complete, on the compaction's record
    // and in the status, as the workflow will count it when the fold reaches it.
    expect(await history()).toBe(before);
    const recovery = { compactionId, rewriteTokens: 2_800, recoveryTurns: 2 };
    const [record] = (await compactionsOf(testDb.db, t)).filter((c) => c.id === compactionId);
    expect(record).toMatchObject({ cache_rewrite_tokens: 2_800, cache_recovery_turns: 2 });
    const status = await stack.client.status(t, conv);
    expect(status.cache).toMatchObject({ watching: null, lastRecovery: recovery, turns: settled.cache.turns + 3 });
    // The next notification (a reply over the threshold) carries the fold: the workflow's own count agrees.
    openai.enqueue(reply('over', usage(160_000)));
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- again'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'd?' }], 'r5') });
    const after = await stack.client.settled(t, conv);
    expect(after.cache.lastRecovery).toEqual(recovery);
    expect(after.cache.turns).toBe(settled.cache.turns + 4);
  });

  it('while a background compaction runs: in the gateway too, quiet, the workflow counting them when it settles', async () => {
    const { t, conv } = await published();
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)));
    const handle = stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv));
    openai.enqueue(reply('that was long', usage(160_000)));
    // The summary takes a while: the next turns run while the compaction does.
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- read the modules', { delayMs: 3_000 }));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'long?' }], 'b1') });
    // The fake answers in order: the next turns are scripted once the summary's request is in (and delayed).
    const summaryAsked = () =>
      openai.chatRequests().some((r) => {
        const messages: Array<{ content: string }> = r.body.messages ?? [];
        return messages.at(-1)?.content.startsWith('Write a structured handoff summary') === true;
      });
    await until(summaryAsked);
    openai.enqueue(reply('during one', usage(2_000)));
    openai.enqueue(reply('during two', usage(2_100)));
    const one = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: 'one more?' }], 'b2'),
    });
    const two = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: 'and more?' }], 'b3'),
    });
    expect([one.reply.content, two.reply.content]).toEqual(['during one', 'during two']);
    expect(one.compaction).toBeNull();
    expect((await stack.client.status(t, conv)).compacting).not.toBeNull();
    // A second summary request, if the summariser makes one, gets a summary too.
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- read the modules'));
    const settled = await stack.client.settled(t, conv);
    expect(settled.compressionCount).toBe(1);
    expect(settled.cache.turns).toBe(4);
    expect(settled.appliedSeq).toBe(settled.batchSeq);
    // The turns ran here: the workflow's history holds the first turn's model call only (no update for the
    // others). Of their batches only the crossing reply was notified; the turns' batches while the compaction ran
    // were quiet, their fold applied by the workflow before the compaction's outcome (one openNotification).
    const events = (await settledHistory(handle)).events ?? [];
    const runs = activityRuns({ events });
    expect(runs.respond).toBe(1);
    expect(runs.openNotification).toBe(1);
    const updates = events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(updates).toHaveLength(1);
    const notified = events
      .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'batchStored')
      .map((e) => {
        const payload = e.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0];
        return JSON.parse(Buffer.from(payload?.data ?? []).toString()) as {
          turnFollows?: boolean;
          turn?: { prompt_tokens: number };
        };
      });
    const turnBatches = notified.filter((batch) => batch.turnFollows || batch.turn);
    expect(turnBatches.map((batch) => batch.turn?.prompt_tokens)).toEqual([160_000]);
    // Every message in order after the summary.
    const roles = await liveRoles(t, conv);
    expect(roles.slice(-4)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('a reading taken before a commit lands after it: neither the verdict nor a new trigger', async () => {
    const { t, conv } = await published();
    await stack.client.submit(t, conv, batch(agentTranscript(8).slice(1)));
    openai.enqueue(reply('that was long', usage(160_000)));
    openai.enqueue(reply('## Goal\nAnswer.\n## Progress\n### Done\n- read the modules', { delayMs: 1_000 }));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'long?' }], 'v1') });
    await until(() =>
      openai.chatRequests().some((r) => {
        const messages: Array<{ content: string }> = r.body.messages ?? [];
        return messages.at(-1)?.content.startsWith('Write a structured handoff summary') === true;
      }),
    );
    // This turn's context is read before the compaction commits; its reply (still the long transcript's size)
    // comes back after the commit.
    openai.enqueue(reply('slow and long', { ...usage(160_000), delayMs: 2_500 }));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'still long?' }], 'v2') });
    const settled = await stack.client.settled(t, conv);
    expect(settled.compressionCount).toBe(1);
    expect(settled.ineffectiveStrikes).toBe(0);
    expect(settled.cache.turns).toBe(3);
  });

  it('a retried turn whose batch is stored but unanswered goes to the workflow, with the fold before it', async () => {
    const { t, conv } = await published();
    openai.enqueue(reply('quiet one', usage(1_500)));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'q?' }], 'r1') });
    // The next turn's batch is stored but its first attempt never answered (here: the batch posted on its own).
    const messages = keyed([{ role: 'user', content: 'lost?' }], 'r2');
    await stack.client.submit(t, conv, { messages });
    openai.enqueue(reply('answered'));
    const turn = await stack.client.chatTurn(t, conv, { messages });
    expect(turn.reply.content).toBe('answered');
    // The workflow took over the folded quiet turn before running this one: three turns counted.
    const status = await stack.client.sync(t, conv);
    expect(status.cache.turns).toBe(3);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });

  it('a transient model failure hands the turn to the workflow, whose retry answers it', async () => {
    const { t, conv } = await published();
    openai.enqueue(serverError(503));
    openai.enqueue(reply('second try'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'flaky?' }], 'f1') });
    expect(turn.reply.content).toBe('second try');
    expect(openai.chatRequests()).toHaveLength(3);
    const events = await settledHistory(stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv)));
    // The first turn and this one ran in the workflow; the user message is stored once.
    expect(activityRuns(events).respond).toBe(2);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(await turnRows(t)).toBe(2);
  });

  it('a permanent model failure answers 422 at once, stores no reply, and the conversation goes on', async () => {
    const { t, conv, history } = await published();
    const before = await history();
    openai.enqueue(unauthorized());
    const failed = stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'denied?' }], 'x1') });
    await expect(failed).rejects.toMatchObject({ statusCode: 422 });
    expect(openai.chatRequests()).toHaveLength(2);
    expect(await history()).toBe(before);
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant', 'user']);
    openai.enqueue(reply('fine now'));
    const next = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'ok?' }], 'x2') });
    expect(next.reply.content).toBe('fine now');
  });
});

describe("a chat turn's provider", () => {
  const CLAUDE = { model: 'claude-test', provider: 'anthropic', contextLength: 200_000 };

  it('is the one the conversation has now: switched to one not configured, refused before anything is stored', async () => {
    const { t, conv } = await conversation();
    openai.enqueue(reply('first'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'one?' }], 'v1') });
    await stack.client.switchModel(t, conv, CLAUDE);
    const before = await liveRoles(t, conv);
    const refused = stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'v2') });
    await expect(refused).rejects.toThrow(/provider 'anthropic' is not configured/);
    expect(await liveRoles(t, conv)).toEqual(before);
    expect(openai.chatRequests()).toHaveLength(1);
  });

  it('is the one the conversation has now: created with one not configured, switched to one that is, it runs', async () => {
    const t = await newTenant(testDb.db);
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are terse.' }]), CLAUDE);
    await stack.client.switchModel(t, conv, GPT);
    openai.enqueue(reply('now it runs'));
    const ran = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'three?' }], 'v3') });
    expect(ran.reply.content).toBe('now it runs');
    expect(await liveRoles(t, conv)).toEqual(['system', 'user', 'assistant']);
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

  it('two attempts that both called the model: the reply stored first is the turn’s, the later one answers with it', async () => {
    // E.g. a retry another gateway took to the workflow while this one's call still ran, or a respond attempt
    // retried while an earlier one lived on: the replies differ, so the later one finds the turn's key taken.
    const { t, conv } = await conversation();
    const status = await stack.client.status(t, conv);
    const runner = createTurnRunner({ ...respondDepsFrom(llm), db: testDb.db });
    const input = {
      tenantId: t,
      conversationId: conv,
      sessionId: status.sessionId,
      model: GPT.model,
      provider: GPT.provider,
      turnKey: `turn:${randomUUID()}`,
      tools: null,
      afterCompactionId: null,
    } as unknown as RespondInput;
    const usage = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
    const attempt = (content: string) =>
      ({
        provider: { id: 'openai' },
        result: {
          message: { role: 'assistant', content },
          finishReason: 'stop',
          usage: { ...usage, cache_read_tokens: 0, cache_write_tokens: 0, uncached_input_tokens: 10 },
          cachingEnabled: false,
        },
      }) as unknown as TurnCall;
    const first = await runner.store(input, attempt('stored first'));
    expect(first?.result.messageId).toBeGreaterThan(0);
    expect(await runner.store(input, attempt('stored second'))).toBeNull();
    expect((await runner.storedTurn(input))?.messageId).toBe(first?.result.messageId);
    expect((await allRows(testDb.db, t)).map((r) => r.content)).toEqual(['You are terse.', 'stored first']);
    expect(await turnRows(t)).toBe(1);
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
