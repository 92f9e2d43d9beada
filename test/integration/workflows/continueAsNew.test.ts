// Continue-as-new of the conversation workflow (DESIGN.md §3) on a dedicated dev server whose history limit is tiny,
// so that a short conversation hands over several times. After the hand-overs the carried state must be intact —
// session id, compression count, compressor reading, applied batches — and no message may be lost or stored twice.
// The tenant rotates sessions on compaction (`in_place: false`): idempotency keys are unique per conversation, so a
// key from before the rotation is still recognised. No workflow history holds message content (claim check).
import { randomUUID } from 'node:crypto';
// Default import: @temporalio/proto is CommonJS without named exports for Node's ESM loader.
import proto, { type temporal } from '@temporalio/proto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { IncomingMessage, SubmitMessages } from '../../../contracts/conversation.js';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant, setTenantPolicy } from '../../../infra/db/tenants.js';
import { type DevServer, startDevServer } from '../../../infra/temporal/devServer.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { SEARCH_ATTRIBUTES } from '../../../workflows/searchAttributes.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { historyText } from '../../support/harness/historyText.js';
import { createStackAt, type StackAt } from '../../support/harness/stackAt.js';
import { agentTranscript } from './transcript.js';

/** Server-side `limit.historyCount.suggestContinueAsNew`: the workflow is told to hand over past this many events. */
const CAN_LIMIT = 60;
const MODEL = { model: 'test-model-200k', contextLength: 200_000 };

let server: DevServer;
let testDb: TestDatabase;
let stack: StackAt;
const summarizer: Summarizer = async (req) => `## Goal\nKeep the tests green (${req.turnCount} turns).`;

beforeAll(async () => {
  server = await startDevServer({
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: false,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': CAN_LIMIT },
  });
  testDb = await createTestDatabase(inject('databaseUrl'));
  // Every batch notified: the runs must grow to the history limit one batch at a time (quiet batches would leave
  // the history untouched; test/integration/gateway/quietBatches.test.ts covers those).
  stack = await createStackAt({
    address: server.address,
    namespace: server.namespace,
    db: testDb.db,
    summarizer,
    conversations: { notifyEveryBatch: true },
  });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
  await server?.stop();
});

const { EventType } = proto.temporal.api.enums.v1;

/** Follows the continue-as-new chain from the first run: the run ids in order, and how each run ended. */
async function runChain(workflowId: string, firstRunId: string): Promise<Array<{ runId: string; events: number }>> {
  const chain: Array<{ runId: string; events: number }> = [];
  let runId: string | null | undefined = firstRunId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await stack.temporal.client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events = history.events ?? [];
    chain.push({ runId, events: events.length });
    const last = events[events.length - 1];
    runId =
      last?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        ? last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId
        : null;
  }
  return chain;
}

/** Every run's history as JSON text (payloads decoded), to look for message content. */
async function historiesText(workflowId: string, runIds: string[]): Promise<string> {
  const parts: string[] = [];
  for (const runId of runIds) {
    const history = await stack.temporal.client.workflow.getHandle(workflowId, runId).fetchHistory();
    parts.push(historyText(history));
  }
  return parts.join('\n');
}

/** Every stored row that came from a client message (compaction summaries and carried copies have no key). */
async function keyedRows(db: Kysely<Database>, tenantId: string) {
  return withTenant(db, tenantId, (tx) =>
    tx
      .selectFrom('messages')
      .select(['id', 'session_id', 'idempotency_key', 'content'])
      .where('idempotency_key', 'is not', null)
      .orderBy('id')
      .execute(),
  );
}

async function rowCount(db: Kysely<Database>, tenantId: string): Promise<number> {
  return withTenant(db, tenantId, async (tx) => {
    const row = await tx
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  });
}

describe('continue-as-new', () => {
  it('hands over several times without losing state, keys or messages', async () => {
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    await ensureTenant(testDb.db, { id: tenantId, name: tenantId });
    await setTenantPolicy(testDb.db, tenantId, { in_place: false });
    const conv = randomUUID();
    const workflowId = conversationWorkflowId(tenantId, conv);
    const handle = stack.temporal.client.workflow.getHandle(workflowId);

    // Every distinct message submitted, in submission order.
    const submitted: IncomingMessage[] = [];
    let batches = 0;
    let lastPrompt = 0;
    const send = async (b: SubmitMessages) => {
      await stack.client.submit(tenantId, conv, b, MODEL);
      batches += 1;
      for (const m of b.messages) if (!submitted.some((s) => s.idempotencyKey === m.idempotencyKey)) submitted.push(m);
    };
    const exchange = (i: number): SubmitMessages => {
      const messages: ChatMessage[] = [
        { role: 'user', content: `question ${i}: what does step ${i} change?` },
        { role: 'assistant', content: `answer ${i}: step ${i} renames one variable.` },
      ];
      lastPrompt = 4_000 + i * 10;
      return {
        messages: messages.map((message, j) => ({ message, idempotencyKey: `${conv}:x${i}:${j}` })),
        usage: { prompt_tokens: lastPrompt, completion_tokens: 20, total_tokens: lastPrompt + 20 },
      };
    };

    // Run 1: a seed transcript long enough to compact, a manual compaction (rotation), then a few exchanges.
    const seed = agentTranscript(10, { tag: 'seed' });
    await send({ messages: seed.map((message, i) => ({ message, idempotencyKey: `${conv}:seed:${i}` })) });
    await stack.client.sync(tenantId, conv);
    const firstRunId = (await handle.describe()).runId;
    const compaction = await stack.client.compact(tenantId, conv);
    expect(compaction.status).toBe('committed');
    const afterCompaction = await stack.client.sync(tenantId, conv);
    expect(afterCompaction.compressionCount).toBe(1);
    const sessionId = afterCompaction.sessionId;
    expect(compaction.sessionId).toBe(sessionId);
    // The compaction ran in the first run (well under the history limit).
    expect((await handle.describe()).runId).toBe(firstRunId);

    // Small exchanges, one at a time, until the workflow has continued as new twice.
    let i = 0;
    let chain = await runChain(workflowId, firstRunId);
    while (chain.length < 3 && i < 60) {
      await send(exchange(i++));
      await stack.client.sync(tenantId, conv);
      chain = await runChain(workflowId, firstRunId);
    }
    expect(chain.length).toBeGreaterThanOrEqual(3);
    // Every finished run closed with continue-as-new shortly after the limit was reached (drain, then hand over).
    for (const run of chain.slice(0, -1)) expect(run.events).toBeGreaterThanOrEqual(CAN_LIMIT);
    const currentRunId = chain[chain.length - 1]!.runId;
    const current = await handle.describe();
    expect(current.runId).toBe(currentRunId);
    // The task timeout the gateway starts the workflow with (clients/conversationClient.ts) is carried over.
    expect(Number(current.raw.executionConfig?.defaultWorkflowTaskTimeout?.seconds)).toBe(8);

    // The carried state after two hand-overs.
    const carried = await stack.client.status(tenantId, conv);
    expect(carried.sessionId).toBe(sessionId);
    expect(carried.compressionCount).toBe(1);
    expect(carried.lastCompaction?.compactionId).toBe(compaction.compactionId);
    expect(carried.lastPromptTokens).toBe(lastPrompt);
    expect(carried.processedBatches).toBe(batches);
    const activeBefore = carried.activeMessages;
    const rowsBefore = await rowCount(testDb.db, tenantId);

    // Keys from the first run are still recognised: a seed message (stored in the session before the rotation) and
    // an exchange from run 1 are duplicates of the conversation, whatever session holds them: nothing is stored.
    const replayed: SubmitMessages = {
      messages: [
        { message: seed[1]!, idempotencyKey: `${conv}:seed:1` },
        { message: exchange(0).messages[0]!.message, idempotencyKey: `${conv}:x0:0` },
      ],
    };
    const stored = await stack.client.submit(tenantId, conv, replayed, MODEL);
    expect(stored).toMatchObject({ seq: null, rows: 0 });
    const afterReplay = await stack.client.sync(tenantId, conv);
    expect((await handle.describe()).runId).toBe(currentRunId);
    expect(afterReplay.activeMessages).toBe(activeBefore);
    expect(afterReplay.processedBatches).toBe(batches);
    expect(await rowCount(testDb.db, tenantId)).toBe(rowsBefore);

    // Bursts of signals without waiting for them to be processed, until at least one more hand-over happened. How
    // many events a burst costs depends on how the server batches signals into workflow tasks (fewer under load), so
    // the burst repeats (bounded) rather than assuming one is enough.
    const burstStart = i;
    const runsBefore = chain.length;
    let bursts = 0;
    let afterBurst = afterReplay;
    while (chain.length <= runsBefore && bursts < 6) {
      for (let n = 0; n < 12; n++) await send(exchange(i++));
      bursts += 1;
      afterBurst = await stack.client.sync(tenantId, conv);
      chain = await runChain(workflowId, firstRunId);
    }
    expect(chain.length).toBeGreaterThanOrEqual(4);
    expect(afterBurst.processedBatches).toBe(batches);
    expect(afterBurst.sessionId).toBe(sessionId);
    expect(afterBurst.compressionCount).toBe(1);
    expect(afterBurst.lastPromptTokens).toBe(4_000 + (i - 1) * 10);
    expect(i - burstStart).toBe(12 * bursts);

    // No message lost or stored twice across the hand-overs: the keyed rows are exactly the distinct messages
    // submitted, in order; seed rows live in the first session, everything after the rotation in the second.
    const rows = await keyedRows(testDb.db, tenantId);
    expect(rows.map((r) => r.idempotency_key)).toEqual(submitted.map((s) => s.idempotencyKey));
    expect(rows.map((r) => r.content)).toEqual(submitted.map((s) => s.message.content));
    expect(rows.filter((r) => r.session_id === sessionId)).toHaveLength(submitted.length - seed.length);
    // Every exchange after the seed is live in the current session: active count = carried rows + exchanges.
    const exchanges = submitted.length - seed.length;
    expect(afterBurst.activeMessages).toBe(afterCompaction.activeMessages + exchanges);

    // Temporal history holds decisions and ids, never message content (DESIGN.md §3 claim check).
    const text = await historiesText(
      workflowId,
      chain.map((run) => run.runId),
    );
    expect(text).toContain('batchStored');
    expect(text).toContain('appliedSeq');
    const contents = submitted.map((m) => m.message.content).filter((c): c is string => typeof c === 'string');
    expect(contents.length).toBeGreaterThan(20);
    for (const content of contents) expect(text).not.toContain(content.slice(0, 40));
  });
});
