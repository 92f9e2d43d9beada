// Background compaction (SPEC §19 `background`, DESIGN.md §3, issue #11 §4) on the real services: an automatic
// compaction at the in-loop threshold runs while the conversation keeps accepting messages and running turns; the
// commit swaps exactly the summarised rows for the summary and keeps everything appended since, in order. Hygiene
// (85 %) and manual compaction wait for it; `background: false` blocks as before.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TemporalUnavailableError } from '../../../clients/conversationClient.js';
import type { SubmitMessages } from '../../../contracts/conversation.js';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { reply } from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack, workerProcessFor } from '../../support/harness/temporal.js';
import { activeTranscript, allRows, keyed, newTenant, type StoredRow } from './transcript.js';

// 100,000-token window: in-loop threshold 75,000 (small-context floor), hygiene at 85,000.
const START = {
  model: 'gpt-test',
  provider: 'openai',
  contextLength: 100_000,
  // A lost summarize attempt is retried within seconds (the worker is killed once below).
  timeouts: { phaseSeconds: 10, summaryAttemptSeconds: 30, summaryHeartbeatSeconds: 2 },
};
const TRIGGER = 80_000;
const OVER_HYGIENE = 90_000;

/** The summariser: counts its calls, can be held closed by a test, can take its time. */
const summariser = { entered: 0, delayMs: 0, hold: Promise.resolve() as Promise<void> };
const summarizer: Summarizer = async () => {
  summariser.entered += 1;
  await summariser.hold;
  if (summariser.delayMs) await sleep(summariser.delayMs);
  return '## Goal\nKeep the conversation going.\n## Progress\n### Done\n- the earlier exchanges';
};
function holdSummariser(): () => void {
  let open!: () => void;
  summariser.hold = new Promise<void>((resolve) => {
    open = resolve;
  });
  return open;
}

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
let CONFIG_YAML: string;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  const provider = fakeOpenAIProvider(openai);
  CONFIG_YAML = provider.yaml;
  // Chat turns go to the fake; summaries come from the test's summariser.
  const { summarizerFor: _unused, ...llm } = provider.llm;
  stack = await createTestStack({ db: testDb.db, summarizer, activityDeps: llm });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});

/** Messages tagged ⟨m<n>⟩ (⟨r<n>⟩ for model replies), so a stored row says which message it is. */
let counter = 0;
const tagged = (role: 'user' | 'assistant' | 'system', text = ''): ChatMessage => ({
  role,
  content: `⟨m${++counter}⟩ ${role} ${text || 'says something about step'} ${counter}`,
});
const tagOf = (row: StoredRow): string => /⟨([mr]\d+)⟩/.exec(row.content ?? '')?.[1] ?? `?${row.id}`;
const tagOfMessage = (m: ChatMessage): string => /⟨([mr]\d+)⟩/.exec(String(m.content))?.[1] ?? '?';
/** An assistant message with one tool call (tagged, so its row says which message it is) and its call id. */
const toolCall = (): { message: ChatMessage; id: string } => {
  const id = `call_${++counter}`;
  const message: ChatMessage = {
    role: 'assistant',
    content: `⟨m${counter}⟩ assistant calls ${id}`,
    tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"notes.txt"}' } }],
  };
  return { message, id };
};
const toolResult = (id: string): ChatMessage => ({
  role: 'tool',
  tool_call_id: id,
  name: 'read_file',
  content: `⟨m${++counter}⟩ result of ${id}`,
});

interface Conversation {
  t: string;
  conv: string;
  /** Every message stored, in acceptance order, by tag. */
  order: string[];
}

async function open(policy: Record<string, unknown>): Promise<Conversation> {
  const t = await newTenant(testDb.db, { protect_first_n: 1, protect_last_n: 4, ...policy });
  const c: Conversation = { t, conv: randomUUID(), order: [] };
  const seed: ChatMessage[] = [tagged('system', 'You are terse.')];
  for (let i = 0; i < 8; i++) seed.push(tagged('user'), tagged('assistant'));
  await submit(c, seed);
  return c;
}

async function submit(c: Conversation, messages: ChatMessage[], usage?: SubmitMessages['usage']) {
  const batch: SubmitMessages = { messages: keyed(messages), ...(usage ? { usage } : {}) };
  await stack.client.submit(c.t, c.conv, batch, START);
  c.order.push(...messages.map(tagOfMessage));
}

/** A reply of the (fake) model with a reading over the in-loop threshold: starts the background compaction. */
async function trigger(c: Conversation, prompt = TRIGGER) {
  await submit(c, [tagged('user'), tagged('assistant')], {
    prompt_tokens: prompt,
    completion_tokens: 10,
    total_tokens: prompt + 10,
  });
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function keyCount(t: string): Promise<{ rows: number; distinct: number }> {
  return withTenant(testDb.db, t, async (tx) => {
    const rows = await tx
      .selectFrom('messages')
      .select('idempotency_key')
      .where('idempotency_key', 'is not', null)
      .execute();
    return { rows: rows.length, distinct: new Set(rows.map((r) => r.idempotency_key)).size };
  });
}

/**
 * The live transcript is the accepted messages in order with exactly one contiguous block replaced by one summary
 * row; `late` (accepted after the summariser was called, so outside its window) are all kept, at the end, in order.
 */
async function expectSwapped(c: Conversation, late: string[]): Promise<void> {
  const status = await stack.client.status(c.t, c.conv);
  const live = await activeTranscript(testDb.db, c.t, status.sessionId);
  const at = live.findIndex((r) => r.summary_body !== null);
  expect(at).toBeGreaterThan(0);
  expect(live.filter((r) => r.summary_body !== null)).toHaveLength(1);
  const head = live.slice(0, at).map(tagOf);
  const rest = live.slice(at + 1).map(tagOf);
  const summarised = c.order.length - head.length - rest.length;
  expect(summarised).toBeGreaterThan(0);
  expect(head).toEqual(c.order.slice(0, head.length));
  expect(rest).toEqual(c.order.slice(head.length + summarised));
  expect(rest.slice(rest.length - late.length)).toEqual(late);
  const keys = await keyCount(c.t);
  expect(keys.rows).toBe(keys.distinct);
}

describe('background compaction (SPEC §19 background)', () => {
  it('keeps accepting messages and running turns while the summary runs, across a worker SIGKILL', async () => {
    const c = await open({ in_place: false });
    // The compaction starts on a worker process whose summariser never answers; that process is killed mid-summary.
    const proc = await workerProcessFor(stack, testDb.url, {
      PAUSE_IN: 'summarize',
      CONFIG_YAML,
      FAKE_OPENAI_KEY: 'sk-openai',
    });
    const late: string[] = [];
    try {
      await proc.waitFor('READY');
      await trigger(c);
      await proc.waitFor('PAUSED summarize');

      // Messages are decided on while the compaction runs: the applied position covers them at once.
      const during = [tagged('user'), tagged('assistant')];
      await submit(c, during);
      late.push(...during.map(tagOfMessage));
      const applied = await stack.client.sync(c.t, c.conv);
      expect(applied.appliedSeq).toBe(applied.batchSeq);
      expect(applied.compacting).toMatchObject({ trigger: 'post_response' });
      expect(applied.compressionCount).toBe(0);

      // A turn goes to the model with the current context (under the hygiene threshold): it does not wait.
      openai.enqueue(reply('⟨r1⟩ answered during the compaction'));
      const question = tagged('user', 'a question during the compaction');
      const turn = await stack.client.chatTurn(c.t, c.conv, { messages: keyed([question]) });
      c.order.push(tagOfMessage(question), 'r1');
      late.push(tagOfMessage(question), 'r1');
      expect(turn.status.compacting).not.toBeNull();
      expect(turn.compaction).toBeNull();

      expect(await proc.kill()).toBe('SIGKILL');
    } finally {
      await proc.kill();
    }
    // Messages keep being accepted (stored) while no worker runs.
    const whileDown = [tagged('user'), tagged('assistant')];
    await submit(c, whileDown);
    late.push(...whileDown.map(tagOfMessage));

    // A new worker with a summariser that takes 5 s retries the lost attempt; messages keep arriving meanwhile.
    summariser.delayMs = 5_000;
    const entered = summariser.entered;
    await stack.startWorker();
    try {
      await until('the retried summariser call', () => summariser.entered > entered);
      const more = [tagged('user'), tagged('assistant')];
      await submit(c, more);
      late.push(...more.map(tagOfMessage));
      expect((await stack.client.sync(c.t, c.conv)).compacting).not.toBeNull();
      // A turn while the 5 s summary runs does not wait for it either.
      openai.enqueue(reply('⟨r3⟩ answered during the retried summary'));
      const meanwhile = tagged('user', 'a question during the retried summary');
      const turned = await stack.client.chatTurn(c.t, c.conv, { messages: keyed([meanwhile]) });
      c.order.push(tagOfMessage(meanwhile), 'r3');
      late.push(tagOfMessage(meanwhile), 'r3');
      expect(turned.status.compacting).not.toBeNull();

      const settled = await stack.client.settled(c.t, c.conv, 120_000);
      expect(settled.compacting).toBeNull();
      expect(settled.compressionCount).toBe(1);
      expect(settled.lastCompaction).toMatchObject({ trigger: 'post_response', status: 'committed' });
      await expectSwapped(c, late);

      // The next turn reads the compacted transcript of the new session (rotation), with every message since.
      openai.enqueue(reply('⟨r2⟩ after the compaction'));
      const next = tagged('user', 'after the compaction');
      const after = await stack.client.chatTurn(c.t, c.conv, { messages: keyed([next]) });
      c.order.push(tagOfMessage(next), 'r2');
      expect(after.status.sessionId).toBe(settled.sessionId);
      const sent = JSON.stringify(openai.chatRequests().at(-1)?.body?.messages ?? null);
      for (const tag of late) expect(sent).toContain(`⟨${tag}⟩`);
      late.push(tagOfMessage(next), 'r2');
      await expectSwapped(c, late);
    } finally {
      summariser.delayMs = 0;
    }
  });

  it('hygiene above 85 % and a manual compaction wait for the running one', async () => {
    const c = await open({});
    const release = holdSummariser();
    const entered = summariser.entered;
    await trigger(c);
    await until('the summariser call', () => summariser.entered > entered);

    // A reading over the hygiene threshold with a user message waiting: the turn must not go out at 90 %.
    await submit(c, [tagged('assistant'), tagged('user')], {
      prompt_tokens: OVER_HYGIENE,
      completion_tokens: 10,
      total_tokens: OVER_HYGIENE + 10,
    });
    await expect(stack.client.sync(c.t, c.conv, 1_500)).rejects.toBeInstanceOf(TemporalUnavailableError);
    let manualDone = false;
    const manual = stack.client.compact(c.t, c.conv).then((result) => {
      manualDone = true;
      return result;
    });
    await sleep(500);
    expect(manualDone).toBe(false);

    release();
    const result = await manual;
    expect(result).toMatchObject({ trigger: 'manual', status: 'committed' });
    const settled = await stack.client.settled(c.t, c.conv);
    // The background one committed first; hygiene then found the window small; the manual one ran after it.
    expect(settled.compressionCount).toBe(2);
    expect(settled.lastCompaction?.trigger).toBe('manual');
    expect(settled.compacting).toBeNull();
  });

  it('a chat turn above the hygiene threshold waits for the running compaction, then goes out compacted', async () => {
    const c = await open({});
    const release = holdSummariser();
    const entered = summariser.entered;
    await trigger(c);
    await until('the summariser call', () => summariser.entered > entered);
    // The model's last reading is over 85 % of the window: the next turn must not go out as the context stands.
    await submit(c, [tagged('assistant')], {
      prompt_tokens: OVER_HYGIENE,
      completion_tokens: 10,
      total_tokens: OVER_HYGIENE + 10,
    });
    const asked = openai.chatRequests().length;
    openai.enqueue(reply('⟨r9⟩ answered after the compaction'));
    let answered = false;
    const turn = stack.client
      .chatTurn(c.t, c.conv, { messages: keyed([tagged('user', 'a question over the safety net')]) })
      .then((result) => {
        answered = true;
        return result;
      });
    await sleep(1_000);
    expect(answered).toBe(false);
    expect(openai.chatRequests()).toHaveLength(asked);

    release();
    const result = await turn;
    expect(result.reply.content).toContain('⟨r9⟩');
    expect(openai.chatRequests()).toHaveLength(asked + 1);
    // It went out with the summary in place of the window, not with the context over the safety net.
    const sent = JSON.stringify(openai.chatRequests().at(-1)?.body?.messages ?? null);
    expect(sent).toContain('Keep the conversation going');
    expect(sent).not.toContain(`⟨${c.order[3]}⟩`);
  });

  it('background: false blocks the conversation until the compaction is done', async () => {
    const c = await open({ background: false });
    const release = holdSummariser();
    const entered = summariser.entered;
    await trigger(c);
    await until('the summariser call', () => summariser.entered > entered);
    await expect(stack.client.sync(c.t, c.conv, 1_000)).rejects.toBeInstanceOf(TemporalUnavailableError);
    release();
    const status = await stack.client.sync(c.t, c.conv);
    expect(status.compacting).toBeNull();
    expect(status.compressionCount).toBe(1);
  });

  it('whatever arrives before and during the compaction, the commit keeps it all, in order (property)', async () => {
    // A batch: user and assistant messages, and tool calls whose result comes with the next batch — so a call may be
    // the last message stored when the compaction starts, its result accepted while the summary runs.
    const batchOf = fc.array(fc.constantFrom<'user' | 'assistant' | 'call'>('user', 'assistant', 'call'), {
      minLength: 1,
      maxLength: 3,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(batchOf, { maxLength: 2 }),
        fc.array(batchOf, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        async (beforeCall, afterCall, inPlace) => {
          const c = await open({ in_place: inPlace });
          const release = holdSummariser();
          const entered = summariser.entered;
          let pending: string[] = [];
          /** The batch's messages: the results of the calls left open by the one before, then its own. */
          const messagesOf = (kinds: Array<'user' | 'assistant' | 'call'>): ChatMessage[] => {
            const messages = pending.map((id) => toolResult(id));
            pending = [];
            for (const kind of kinds) {
              if (kind !== 'call') {
                messages.push(tagged(kind));
                continue;
              }
              // A call ends its batch: its result is the next message.
              const call = toolCall();
              messages.push(call.message);
              pending.push(call.id);
              break;
            }
            return messages;
          };
          await trigger(c);
          // Accepted before the summariser is called: inside or outside the compaction's window.
          for (const kinds of beforeCall) await submit(c, messagesOf(kinds));
          await until('the summariser call', () => summariser.entered > entered);
          const late: string[] = [];
          for (const kinds of afterCall) {
            const messages = messagesOf(kinds);
            await submit(c, messages);
            late.push(...messages.map(tagOfMessage));
          }
          release();
          // The last calls' results arrive as the compaction commits.
          if (pending.length > 0) {
            const results = messagesOf([]);
            await submit(c, results);
            late.push(...results.map(tagOfMessage));
          }
          const status = await stack.client.settled(c.t, c.conv);
          expect(status.compressionCount).toBe(1);
          await expectSwapped(c, late);
          const rows = await allRows(testDb.db, c.t);
          // Nothing summarised came from after the summariser's call.
          const archived = rows.filter((r) => r.compacted).map(tagOf);
          for (const tag of late) expect(archived).not.toContain(tag);
          // No tool call was cut from its result: a result in the live transcript has its call there, before it.
          const live = (await activeTranscript(testDb.db, c.t, status.sessionId)).map((r) => r.content ?? '');
          live.forEach((content, i) => {
            const id = /result of (call_\d+)/.exec(content)?.[1];
            if (id) expect(live.slice(0, i).some((earlier) => earlier.endsWith(`calls ${id}`))).toBe(true);
          });
        },
      ),
      { numRuns: 8 },
    );
  });
});
