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
import type { Summarizer } from '../../../engine/index.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import { compactionWorkflowId } from '../../../workflows/ids.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack, workflowBundle } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, allRows, batch, compactionsOf, eventsOf, newTenant } from './transcript.js';

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
  plugin(
    'splits-tool-pairs',
    `export default () => ({ ${ENGINE_SHAPE}, compress: async (messages) => messages.filter((m) => m.role !== 'assistant' || !m.tool_calls) });`,
  );
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
    expect(live[4]?.role).toBe('user');
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
    ['throws-on-compress', "Context engine 'throws-on-compress' failed to compress (plugin bug)"],
    ['splits-tool-pairs', "Context engine 'splits-tool-pairs' returned a transcript the host refuses"],
  ])('%s: nothing of the plugin is committed; the built-in summary is, with the line', async (name, start) => {
    const { t, conv, result, record } = await compactedConversation({ context: { engine: name } });
    expect(result.status).toBe('committed');
    expect(record?.engine).toBe('compressor');
    expect(record?.engine_fallback).toMatch(
      new RegExp(`^${start.replace(/[()]/g, '\\$&')}.*using the built-in compressor\\.$`),
    );
    expect(record?.summary_body).toContain('from the LLM');
    // Every tool call in the live transcript still has its result (the plugin's output was refused).
    const live = await activeTranscript(testDb.db, t, result.sessionId);
    expect(live.filter((r) => r.role === 'tool').length).toBeGreaterThan(0);
    expect((await stack.client.status(t, conv)).notices.some((n) => n.startsWith(start))).toBe(true);
    await replays(t, record as { session_id: string; seq: number });
  });

  it('`compressor` (the default) never consults the plugin directory and records no line', async () => {
    const { result, record } = await compactedConversation({});
    expect(result.status).toBe('committed');
    expect(record).toMatchObject({ engine: 'compressor', engine_fallback: null });
  });
});
