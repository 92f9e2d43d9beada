// SPEC §10.3 end to end (issue #14 §1) on the real services: a tenant's `context.engine` selects a plugin from the
// plugin directory, whose `compress()` runs inside the compaction workflow (one activity) and is committed like the
// built-in result (archived rows stay stored and searchable, one `session:compress` event); an engine that is not
// found, or that fails while compressing, gives way to the built-in compressor with the §10.3 line on the record and
// as a notice, never silently; and the compaction's history replays against the workflow code.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCompactionActivities } from '../../../activities/compaction/index.js';
import { type Summarizer, unpairedToolIds } from '../../../engine/index.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import { compactionWorkflowId } from '../../../workflows/ids.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack, workflowBundle } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, allRows, batch, compactionsOf, eventsOf, newTenant } from './transcript.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const SHIPPED = fileURLToPath(new URL('../../../plugins/context_engine/archive-only', import.meta.url));

let testDb: TestDatabase;
let stack: TestStack;
let pluginDir: string;
let llmCalls = 0;
const summarizer: Summarizer = async () => {
  llmCalls++;
  return '## Goal\nfrom the LLM';
};

/** A plugin module in the test's plugin directory. */
function plugin(name: string, source: string): void {
  mkdirSync(join(pluginDir, name));
  writeFileSync(join(pluginDir, name, 'index.js'), source);
}

const ENGINE_SHAPE = `name: 'x', shouldCompress: () => false, updateFromResponse() {}, updateModel() {},
  getStatus: () => ({ last_prompt_tokens: 0, threshold_tokens: 0, context_length: 0, usage_percent: 0, compression_count: 0 })`;

beforeAll(async () => {
  pluginDir = mkdtempSync(join(tmpdir(), 'dc-plugins-'));
  symlinkSync(SHIPPED, join(pluginDir, 'archive-only'), 'dir');
  plugin(
    'throws-on-compress',
    `export default () => ({ ${ENGINE_SHAPE}, compress: async () => { throw new Error('plugin bug'); } });`,
  );
  // Keeps every message, but puts the first tool result after the next message: the pair is no longer adjacent.
  plugin(
    'moves-a-result',
    `export default () => ({ ${ENGINE_SHAPE}, compress: async (messages) => {
      const out = messages.slice(); const i = out.findIndex((m) => m.role === 'tool');
      const [result] = out.splice(i, 1); out.splice(i + 1, 0, result); return out; } });`,
  );
  plugin(
    'splits-tool-pairs',
    `export default () => ({ ${ENGINE_SHAPE}, compress: async (messages) => messages.filter((m) => m.role !== 'assistant' || !m.tool_calls) });`,
  );
  plugin('throws-on-import', `throw new Error('broken module'); export default () => null;`);
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer, activityDeps: { pluginDir } });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
  rmSync(pluginDir, { recursive: true, force: true });
});

async function compactedConversation(policy: Record<string, unknown>) {
  const t = await newTenant(testDb.db, { protect_last_n: 4, ...policy });
  const conv = randomUUID();
  const messages = agentTranscript(8);
  await stack.client.submit(t, conv, batch(messages), { model: 'acme-chat', contextLength: 100_000 });
  await stack.client.sync(t, conv);
  const result = await stack.client.compact(t, conv);
  const [record] = await compactionsOf(testDb.db, t);
  return { t, conv, messages, result, record };
}

async function replays(t: string, record: { session_id: string; seq: number }): Promise<void> {
  const handle = stack.temporal.client.workflow.getHandle(compactionWorkflowId(t, record.session_id, record.seq));
  const history = await handle.fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history);
}

describe('context.engine names a plugin: its compress() runs in the compaction workflow', () => {
  it('archive-only: head, one pointer, tail; the middle archived, searchable, no summary and no LLM call', async () => {
    const before = llmCalls;
    const { t, messages, result, record } = await compactedConversation({ context: { engine: 'archive-only' } });
    expect(result.status).toBe('committed');
    expect(llmCalls).toBe(before);
    expect(record).toMatchObject({
      status: 'committed',
      engine: 'archive-only',
      engine_fallback: null,
      summary: null,
      summary_body: null,
      in_place: true,
    });
    // 33 messages: system + the first 3 (protect_first_n) + pointer + the last 4 (protect_last_n: 4).
    const live = await activeTranscript(testDb.db, t, result.sessionId);
    expect(live.map((r) => r.content)).toEqual([
      ...messages.slice(0, 4).map((m) => m.content),
      expect.stringMatching(/^\[ARCHIVED CONTEXT\] 25 earlier message\(s\)/),
      ...messages.slice(29).map((m) => m.content),
    ]);
    // Between a tool result and a user message the pointer speaks as the assistant.
    expect(live[4]?.role).toBe('assistant');
    const archived = (await allRows(testDb.db, t)).filter((r) => r.compacted);
    expect(archived).toHaveLength(25);
    expect(archived.every((r) => !r.active)).toBe(true);
    expect(record?.compacted_row_ids.map(Number).sort((a, b) => a - b)).toEqual(archived.map((r) => Number(r.id)));
    // Lossless: an archived round is still found by search.
    const hits = await searchMessages(testDb.db, t, 'module_5');
    expect(hits.some((h) => archived.some((r) => r.id === h.id))).toBe(true);
    expect(await eventsOf(testDb.db, t)).toHaveLength(1);
    expect(record?.stats).toMatchObject({ droppedCount: 25, prunedCount: 0, fallbackUsed: false, summary: null });
    await replays(t, record as { session_id: string; seq: number });
  });

  it('compacting again archives the earlier pointer with the new middle: one pointer, never stacked', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, context: { engine: 'archive-only' } });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), { model: 'acme-chat', contextLength: 100_000 });
    await stack.client.sync(t, conv);
    expect((await stack.client.compact(t, conv)).status).toBe('committed');
    await stack.client.submit(t, conv, batch(agentTranscript(3, { tag: 'later' }).slice(1)));
    await stack.client.sync(t, conv);
    const second = await stack.client.compact(t, conv);
    expect(second.status).toBe('committed');
    const live = await activeTranscript(testDb.db, t, second.sessionId);
    const pointers = live.filter((r) => (r.content ?? '').startsWith('[ARCHIVED CONTEXT]'));
    expect(pointers).toHaveLength(1);
    expect(live.at(-1)?.content).toMatch(/^later 2 done/);
  });
});

describe('the host’s rules hold for a plugin’s result', () => {
  it('compression.in_place: false — the result goes to a new session (SPEC §13.3); the old rows stay in the old one', async () => {
    const { t, result, record } = await compactedConversation({ in_place: false, context: { engine: 'archive-only' } });
    expect(result.status).toBe('committed');
    expect(record).toMatchObject({ engine: 'archive-only', in_place: false, new_session_id: result.sessionId });
    expect(result.sessionId).not.toBe(record?.session_id);
    const live = await activeTranscript(testDb.db, t, result.sessionId);
    expect(live).toHaveLength(9);
    expect(live.filter((r) => (r.content ?? '').startsWith('[ARCHIVED CONTEXT]'))).toHaveLength(1);
    const [event] = await eventsOf(testDb.db, t);
    expect(event?.payload).toMatchObject({ in_place: false, old_session_id: record?.session_id });
  });

  it('SPEC §19 min_gain_tokens: an automatic result that saves too little is recorded as rejected, nothing changes', async () => {
    const t = await newTenant(testDb.db, {
      protect_last_n: 4,
      min_gain_tokens: 1_000_000,
      context: { engine: 'archive-only' },
    });
    const conv = randomUUID();
    const CTX100K = { model: 'acme-chat', contextLength: 100_000 };
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CTX100K);
    const reported = agentTranscript(1, { tag: 'reported' }).slice(1);
    await stack.client.submit(t, conv, batch(reported, { prompt_tokens: 75_000 }), CTX100K);
    const status = await stack.client.settled(t, conv);
    expect(status.lastCompaction).toMatchObject({ trigger: 'post_response', status: 'rejected' });
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ status: 'rejected', engine: 'archive-only', compacted_row_ids: [] });
    expect((await allRows(testDb.db, t)).every((r) => r.active && !r.compacted)).toBe(true);
    expect(await eventsOf(testDb.db, t)).toEqual([]);
  });

  it('engineCompress retried after its commit returns the committed outcome and writes nothing again', async () => {
    const { t, result, record } = await compactedConversation({ context: { engine: 'archive-only' } });
    const rowsBefore = await allRows(testDb.db, t);
    const acts = createCompactionActivities({ db: testDb.db, summarizer: null, pluginDir });
    const again = await acts.engineCompress({
      tenantId: t,
      compactionId: record!.id,
      engine: 'archive-only',
      requiredGain: null,
      newSessionId: null,
      platform: 'api',
      contextLength: 100_000,
      beforeRowId: null,
      force: true,
    });
    expect(again).toMatchObject({ fallback: null, status: 'committed', sessionId: result.sessionId });
    expect(again.fallback === null && again.stats).toMatchObject({ droppedCount: 25, summary: null });
    expect(await allRows(testDb.db, t)).toEqual(rowsBefore);
    expect(await eventsOf(testDb.db, t)).toHaveLength(1);
  });
});

describe('the plugin runs for every trigger the host decides', () => {
  const CTX100K = { model: 'acme-chat', contextLength: 100_000 };

  it('post_response (background): a reading at the threshold compacts with the plugin; later rows stay in order', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, context: { engine: 'archive-only' } });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CTX100K);
    const reported = agentTranscript(1, { tag: 'reported' }).slice(1);
    await stack.client.submit(t, conv, batch(reported, { prompt_tokens: 75_000 }), CTX100K);
    const after = agentTranscript(1, { tag: 'after' }).slice(1);
    await stack.client.submit(t, conv, batch(after), CTX100K);
    const status = await stack.client.settled(t, conv);
    expect(status.lastCompaction).toMatchObject({ trigger: 'post_response', status: 'committed' });
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ engine: 'archive-only', trigger: 'post_response' });
    const live = await activeTranscript(testDb.db, t, status.sessionId);
    // Whatever was appended while it ran follows the kept tail, in order.
    expect(live.slice(-4).map((r) => r.content)).toEqual(after.map((m) => m.content));
    expect(live.filter((r) => (r.content ?? '').startsWith('[ARCHIVED CONTEXT]'))).toHaveLength(1);
  });

  it('hygiene: the history before the incoming message is archived; the message follows it', async () => {
    const t = await newTenant(testDb.db, {
      protect_first_n: 1,
      protect_last_n: 1,
      context: { engine: 'archive-only' },
    });
    const conv = randomUUID();
    const huge = (i: number) => ({ role: 'assistant' as const, content: `part ${i} ${'x'.repeat(119_990)}` });
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'sys' }]), CTX100K);
    await stack.client.submit(t, conv, batch([0, 1, 2].map(huge)), CTX100K);
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'what next?' }]), CTX100K);
    const status = await stack.client.settled(t, conv);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ trigger: 'hygiene', engine: 'archive-only', status: 'committed' });
    const live = await activeTranscript(testDb.db, t, status.sessionId);
    expect(live.map((r) => r.role)).toEqual(['system', 'assistant', 'user', 'assistant', 'user']);
    expect(live[2]?.content).toMatch(/^\[ARCHIVED CONTEXT\] 1 earlier message/);
    expect(live.at(-1)?.content).toBe('what next?');
  });
});

describe('config.yaml’s context.engine', () => {
  it('applies to every tenant that names none; a tenant’s own name wins', async () => {
    const second = await createTestStack({
      db: testDb.db,
      summarizer,
      activityDeps: { pluginDir, contextEngine: 'archive-only' },
    });
    try {
      for (const [policy, engine] of [
        [{}, 'archive-only'],
        [{ context: { engine: 'compressor' } }, 'compressor'],
      ] as const) {
        const t = await newTenant(testDb.db, { protect_last_n: 4, ...policy });
        const conv = randomUUID();
        await second.client.submit(t, conv, batch(agentTranscript(8)), { model: 'acme-chat', contextLength: 100_000 });
        await second.client.sync(t, conv);
        expect((await second.client.compact(t, conv)).status).toBe('committed');
        const [record] = await compactionsOf(testDb.db, t);
        expect(record).toMatchObject({ engine, engine_fallback: null });
      }
    } finally {
      await second.close();
    }
  });
});

describe('the built-in compressor takes over, never silently', () => {
  it('a name no plugin directory or registry knows: the §10.3 line on the record and as a notice', async () => {
    const { t, conv, result, record } = await compactedConversation({ context: { engine: 'no-such-engine' } });
    const line = "Context engine 'no-such-engine' not found; using the built-in compressor.";
    expect(result.status).toBe('committed');
    expect(record).toMatchObject({ engine: 'compressor', engine_fallback: line, summary_backend: 'llm' });
    expect(record?.summary_body).toContain('from the LLM');
    expect((await stack.client.status(t, conv)).notices).toContain(line);
    await replays(t, record as { session_id: string; seq: number });
  });

  it.each([
    ['throws-on-compress', 'failed to compress', 'plugin bug'],
    ['splits-tool-pairs', 'returned a transcript the host refuses', 'a tool call is separated from its result'],
    ['moves-a-result', 'returned a transcript the host refuses', 'a tool call is separated from its result'],
  ])('%s: nothing of the plugin is committed; the built-in summary is, with the line', async (name, what, reason) => {
    const { t, conv, result, record } = await compactedConversation({ context: { engine: name } });
    const line = `Context engine '${name}' ${what}; using the built-in compressor.`;
    expect(result.status).toBe('committed');
    expect(record?.engine).toBe('compressor');
    // The reason (which may quote the transcript) stays in the record; the notice is the line alone.
    expect(record?.engine_fallback).toMatch(new RegExp(`^${escapeRegExp(line)} Reason: ${escapeRegExp(reason)}`));
    expect(record?.summary_body).toContain('from the LLM');
    // Every tool call of the live transcript is directly followed by its result (the plugin's output was refused).
    const live = (await loadTranscript(testDb.db, t, result.sessionId)).map((r) => r.message);
    expect(live.filter((m) => m.role === 'tool').length).toBeGreaterThan(0);
    expect([...unpairedToolIds(live)]).toEqual([]);
    expect((await stack.client.status(t, conv)).notices).toContain(line);
    await replays(t, record as { session_id: string; seq: number });
  });

  it('a plugin that does not load: the built-in summary, with the failed-to-load line', async () => {
    const { t, conv, result, record } = await compactedConversation({ context: { engine: 'throws-on-import' } });
    const line = "Context engine 'throws-on-import' failed to load; using the built-in compressor.";
    expect(result.status).toBe('committed');
    expect(record).toMatchObject({ engine: 'compressor', engine_fallback: line });
    expect(record?.summary_body).toContain('from the LLM');
    expect((await stack.client.status(t, conv)).notices).toContain(line);
    await replays(t, record as { session_id: string; seq: number });
  });

  it('`compressor` (the default) records the built-in engine and no line', async () => {
    const { result, record } = await compactedConversation({});
    expect(result.status).toBe('committed');
    expect(record).toMatchObject({ engine: 'compressor', engine_fallback: null });
  });
});
