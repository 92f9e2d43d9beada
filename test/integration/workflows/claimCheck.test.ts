// Temporal history holds decisions and ids, never message content (issue #11 §1, DESIGN.md §3 claim check): a
// conversation whose messages, tool output, model reply and summaries all carry a canary goes through an automatic
// (background) compaction, a chat turn in the gateway and one in the workflow, a compaction whose summary fails (fallback) and its replay; then every
// workflow history of the tenant is fetched, payloads decoded, and the canary is nowhere in them — while the
// store and the API answers do hold it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { reply, serverError } from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { historyText } from '../../support/harness/historyText.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, batch, compactionsOf, keyed, newTenant } from './transcript.js';

const CANARY = `canary-${randomUUID()}`;
const START = {
  model: 'gpt-test',
  provider: 'openai',
  contextLength: 100_000,
  timeouts: { phaseSeconds: 10, summaryAttemptSeconds: 10, summaryHeartbeatSeconds: 2 },
};

/** A summariser that quotes what it was given (as a model may), so every summary carries the canary. */
const summariser = { fail: false };
const summarizer: Summarizer = async (request) => {
  if (summariser.fail) throw new Error('the summary model is down');
  return `## Goal\nQuoted: ${JSON.stringify(request).slice(0, 2_000)}`;
};

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  // Chat turns go to the fake; summaries come from the test's summariser.
  const { summarizerFor: _unused, ...llm } = fakeOpenAIProvider(openai).llm;
  stack = await createTestStack({ db: testDb.db, summarizer, activityDeps: llm });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});

function exchange(i: number): ChatMessage[] {
  const id = `call_${i}`;
  return [
    { role: 'user', content: `step ${i}: read /srv/${CANARY}/notes_${i}.txt please` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: `{"path":"${CANARY}"}` } }],
    },
    { role: 'tool', tool_call_id: id, name: 'read_file', content: `the file says ${CANARY} (${i})` },
    { role: 'assistant', content: `step ${i} done, ${CANARY} noted` },
  ];
}

/** Every workflow history of the tenant, payloads decoded as text. */
async function historiesOf(tenantId: string, conversationId: string): Promise<{ ids: string[]; text: string }> {
  const { client } = stack.temporal;
  const ids = new Set<string>([conversationWorkflowId(tenantId, conversationId)]);
  for await (const w of client.workflow.list({ query: `TenantId = '${tenantId}'` })) ids.add(w.workflowId);
  const parts: string[] = [];
  for (const id of ids) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    parts.push(historyText(history));
  }
  return { ids: [...ids], text: parts.join('\n') };
}

describe('claim check', () => {
  it('no workflow history holds message content, summaries or replies', async () => {
    const t = await newTenant(testDb.db, { protect_first_n: 1, protect_last_n: 2 });
    const conv = randomUUID();
    const seed: ChatMessage[] = [{ role: 'system', content: `You are terse. Secret ${CANARY}.` }];
    for (let i = 0; i < 6; i++) seed.push(...exchange(i));
    await stack.client.submit(t, conv, batch(seed), START);
    // A reading over the in-loop threshold: an automatic compaction (in the background).
    await stack.client.submit(t, conv, batch(exchange(6), { prompt_tokens: 80_000 }));
    const first = await stack.client.settled(t, conv);
    expect(first.compressionCount).toBe(1);

    // A chat turn whose question and reply carry the canary.
    openai.enqueue(reply(`the answer mentions ${CANARY}`));
    const turn = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: `what about ${CANARY}?` }]),
    });
    expect(turn.reply.content).toContain(CANARY);
    // A turn the workflow runs (the gateway's model call fails transiently: the workflow's respond activity retries
    // it durably), with the canary in its question and reply too.
    openai.enqueue(serverError(503));
    openai.enqueue(reply(`the retried answer mentions ${CANARY}`));
    const durable = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: `and the retried ${CANARY}?` }]),
    });
    expect(durable.reply.content).toContain(`retried answer mentions ${CANARY}`);

    // A compaction whose summary fails (fallback), then its replay with a working summariser.
    for (let i = 7; i < 10; i++) await stack.client.submit(t, conv, batch(exchange(i)));
    summariser.fail = true;
    const fallback = await stack.client.compact(t, conv);
    summariser.fail = false;
    expect(fallback.status).toBe('fallback');
    const replayed = await stack.client.replayCompaction(t, fallback.compactionId);
    expect(replayed.status).toBe('replaced');
    // The API answer holds the replayed summary (read from the store)...
    expect(replayed.summaryBody).toContain(CANARY);
    // The replayed compaction now reports an LLM summary and the quality gate's shares (issue #15 §3).
    const replayedRow = (await compactionsOf(testDb.db, t)).find((c) => c.id === fallback.compactionId);
    expect(replayedRow).toMatchObject({ summary_backend: 'llm', status: 'committed' });
    expect(replayedRow?.retention_after).toBeTypeOf('number');
    // The live transcript holds the replayed summary too.
    const status = await stack.client.settled(t, conv);
    const live = await activeTranscript(testDb.db, t, status.sessionId);
    expect(live.filter((r) => r.summary_body?.includes(CANARY))).toHaveLength(1);

    const { ids, text } = await historiesOf(t, conv);
    // The conversation, its two compactions and the replay were all looked at.
    expect(ids.filter((id) => id.startsWith('compact:'))).toHaveLength(2);
    expect(ids.filter((id) => id.startsWith('replay:'))).toHaveLength(1);
    expect(text).toContain('batchStored');
    // The second turn went through the workflow (its update and its respond activity are in the history).
    expect(text).toContain('chatTurn');
    expect(text).toContain('respond');
    // Payloads are decoded (a field of the published status, inside an activity's input), and hold no canary.
    expect(text).toContain('appliedSeq');
    expect(text).not.toContain(CANARY);
  });
});
