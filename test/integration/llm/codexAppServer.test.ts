// Codex app-server sessions (issue #13 §2, SPEC §15.2) against the REAL binary: `codex app-server` from the pinned
// `@openai/codex` package (test/support/clients/codex.ts), run offline with its model provider pointed at the fake
// Responses server on loopback, one process for this file (the worker's pool starts it on the first turn). The
// thread owns the context: a turn sends only what is new; the local compressor never compacts, even over its
// threshold; every compaction the app-server reports is recorded (record, boundary, compression_count,
// `session:compress` with runtime/thread/turn); `/compress` is `thread/compact/start`; the modes native / hermes /
// off decide who starts automatic compaction; a killed app-server is started again and the thread resumes.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { ChatMessage } from '../../../engine/index.js';
import { AppServerPool } from '../../../infra/codex/pool.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { ensureCodex } from '../../support/clients/codex.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, compactionsOf, keyed, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
let pool: AppServerPool;
let codexHome: string;

/** Codex's own automatic compaction fires once a reading reaches this (SPEC §15.2 `native`). */
const CODEX_AUTO_LIMIT = 90_000;
const upstream = 'model_providers.durable_context_upstream';

beforeAll(async () => {
  const codex = ensureCodex();
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  codexHome = mkdtempSync(join(tmpdir(), 'dctx-app-server-'));
  const config = {
    [`${upstream}.request_max_retries`]: 0,
    [`${upstream}.stream_max_retries`]: 0,
    model_context_window: 100_000,
    model_auto_compact_token_limit: CODEX_AUTO_LIMIT,
    'analytics.enabled': false,
    'feedback.enabled': false,
  };
  const yaml = [
    'model: { default: gpt-5.6, provider: codex }',
    'providers:',
    `  codex: ${JSON.stringify({ api: 'codex_app_server', command: codex, codex_home: codexHome, base_url: openai.baseURL, config })}`,
  ].join('\n');
  pool = new AppServerPool({ ...process.env, RUST_LOG: 'warn' });
  const llm = llmDepsFromConfig(parseConfigText(yaml), process.env, () => undefined);
  stack = await createTestStack({ db: testDb.db, activityDeps: { ...llm, appServers: pool } });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await pool?.close();
  await openai?.close();
  await testDb?.drop();
  if (codexHome) rmSync(codexHome, { recursive: true, force: true });
});
beforeEach(() => {
  openai.requests.length = 0;
});

// The local threshold of a 100,000-token window is 75,000 (SPEC §5.4 floor): readings over it would compact a
// conversation of this host — never one the app-server owns.
const WINDOW = { model: 'gpt-5.6', provider: 'codex', contextLength: 100_000 };
const OVER_BOTH = { input_tokens: 92_000, output_tokens: 40 };
const SMALL = { input_tokens: 3_000, output_tokens: 20 };

async function conversation(policy: Record<string, unknown> = {}): Promise<{ t: string; conv: string }> {
  const t = await newTenant(testDb.db, policy);
  const conv = randomUUID();
  await stack.client.create(t, conv, WINDOW);
  return { t, conv };
}

function turn(t: string, conv: string, content: string) {
  return stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content } as ChatMessage]) });
}

/** What the app-server sent the fake: each request's kind (turn / compaction) and its input's texts. */
function sent() {
  return openai.responsesRequests().map((r) => {
    const meta = JSON.parse(String(r.headers['x-codex-turn-metadata'] ?? '{}')) as Record<string, any>;
    const input = ((r.body as { input?: Array<Record<string, any>> }).input ?? []) as Array<Record<string, any>>;
    const texts = input.flatMap((item) =>
      Array.isArray(item.content) ? item.content.map((c: { text?: string }) => c.text ?? '') : [],
    );
    return { kind: String(meta.request_kind), trigger: meta.compaction?.trigger as string | undefined, texts };
  });
}

async function events(t: string) {
  return withTenant(testDb.db, t, (tx) =>
    tx.selectFrom('events').selectAll().where('type', '=', 'session:compress').orderBy('id').execute(),
  );
}

async function sessionCount(t: string, conv: string): Promise<number> {
  return withTenant(testDb.db, t, async (tx) => {
    const row = await tx
      .selectFrom('sessions as s')
      .innerJoin('conversations as c', (j) => j.onRef('c.current_session_id', '=', 's.id'))
      .select('s.compression_count')
      .where('c.id', '=', conv)
      .executeTakeFirstOrThrow();
    return row.compression_count;
  });
}

/** The active rows of the conversation's current session. */
async function transcript(t: string, conv: string) {
  const head = await withTenant(testDb.db, t, (tx) =>
    tx.selectFrom('conversations').select('current_session_id').where('id', '=', conv).executeTakeFirstOrThrow(),
  );
  return activeTranscript(testDb.db, t, head.current_session_id);
}

async function threadOf(t: string, conv: string): Promise<string | null> {
  return withTenant(testDb.db, t, async (tx) => {
    const row = await tx
      .selectFrom('conversations')
      .select('codex_thread_id')
      .where('id', '=', conv)
      .executeTakeFirst();
    return row?.codex_thread_id ?? null;
  });
}

describe('a Codex app-server session (real binary)', () => {
  it('runs turns on one thread that owns the context; the local compressor never compacts', async () => {
    const { t, conv } = await conversation({ background: false });
    openai.enqueue(reply('The build uses esbuild.', { usage: SMALL }));
    const first = await turn(t, conv, 'Which bundler does the build use?');
    expect(first.reply.content).toBe('The build uses esbuild.');
    const thread = await threadOf(t, conv);
    expect(thread).toMatch(/^[0-9a-f-]{36}$/);

    // Over the local threshold (and under Codex's own): nothing compacts, the transcript stays as stored.
    openai.enqueue(reply('It writes to dist/.', { usage: { input_tokens: 76_000, output_tokens: 30 } }));
    const second = await turn(t, conv, 'Where does it write?');
    expect(second.reply.content).toBe('It writes to dist/.');
    expect(second.compaction).toBeNull();
    const requests = sent();
    expect(requests.map((r) => r.kind)).toEqual(['turn', 'turn']);
    // The second request carries the thread's history: the app-server holds it, the host sent only the question.
    expect(requests[1]?.texts).toEqual(
      expect.arrayContaining(['Which bundler does the build use?', 'The build uses esbuild.', 'Where does it write?']),
    );
    expect(await threadOf(t, conv)).toBe(thread);
    expect((await stack.client.settled(t, conv)).lastPromptTokens).toBe(76_000);
    // The next turn's preflight check would compact a conversation of this host here; this one goes out as is.
    openai.enqueue(reply('Yes.', { usage: SMALL }));
    const third = await turn(t, conv, 'Is that all?');
    expect(third.compaction).toBeNull();
    expect(sent().map((r) => r.kind)).toEqual(['turn', 'turn', 'turn']);
    expect(sent()[2]?.texts.filter((text) => text === 'Is that all?')).toHaveLength(1);
    expect((await stack.client.settled(t, conv)).compressionCount).toBe(0);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
    expect((await transcript(t, conv)).map((m) => m.content)).toEqual([
      'Which bundler does the build use?',
      'The build uses esbuild.',
      'Where does it write?',
      'It writes to dist/.',
      'Is that all?',
      'Yes.',
    ]);
  });

  it('/compress is thread/compact/start: recorded with boundary, count and session:compress; no row changes', async () => {
    const { t, conv } = await conversation({ background: false });
    openai.enqueue(reply('Noted: the API lives in src/api.', { usage: SMALL }));
    await turn(t, conv, 'Remember that the API lives in src/api.');
    const before = await transcript(t, conv);

    openai.enqueue(reply('SUMMARY: the API lives in src/api.', { usage: SMALL }));
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    const requests = sent();
    expect(requests.map((r) => [r.kind, r.trigger])).toEqual([
      ['turn', undefined],
      ['compaction', 'manual'],
    ]);

    const thread = await threadOf(t, conv);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({
      id: result.compactionId,
      trigger: 'codex_app_server',
      in_place: true,
      status: 'committed',
      thread_id: thread,
      session_id: result.sessionId,
    });
    expect(Number(record?.boundary_message_id)).toBe(before.at(-1)?.id);
    expect(record?.turn_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await sessionCount(t, conv)).toBe(1);
    const [event] = await events(t);
    expect(event?.compaction_id).toBe(result.compactionId);
    expect(event?.payload).toEqual({
      platform: 'api',
      session_id: result.sessionId,
      old_session_id: '',
      in_place: true,
      compression_count: 1,
      runtime: 'codex_app_server',
      thread_id: thread,
      turn_id: record?.turn_id,
    });
    expect(await transcript(t, conv)).toEqual(before);
    expect((await stack.client.settled(t, conv)).compressionCount).toBe(1);

    // The thread goes on from the compacted context: the next request carries the summary, not the old turn.
    openai.enqueue(reply('Yes, src/api.', { usage: SMALL }));
    await turn(t, conv, 'Where was the API?');
    const next = sent()[2];
    expect(next?.kind).toBe('turn');
    expect(next?.texts.join('\n')).toContain('SUMMARY: the API lives in src/api.');

    // Its cache economics, as after a local compaction: the first turn after it re-wrote the prefix (nothing read
    // from cache), the second read most of it back: recovered after 2 turns, on the compaction's record.
    const cached = { ...SMALL, input_tokens_details: { cached_tokens: 2_600 } };
    openai.enqueue(reply('Still src/api.', { usage: cached }));
    await turn(t, conv, 'Sure?');
    await stack.client.settled(t, conv);
    const [measured] = await compactionsOf(testDb.db, t);
    expect(measured).toMatchObject({ cache_rewrite_tokens: 0, cache_recovery_turns: 2 });
  });

  it('a failed /compress changes nothing and says why', async () => {
    const { t, conv } = await conversation({ background: false });
    openai.enqueue(reply('Fine.', { usage: SMALL }));
    await turn(t, conv, 'Hello.');
    openai.enqueue({ kind: 'error', status: 400, message: 'the summary request was refused' });
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('failed');
    expect(result.notice).toMatch(/Codex app-server failed; nothing changed/);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
    expect(await sessionCount(t, conv)).toBe(0);
    expect(await events(t)).toEqual([]);
  });

  it('/compress waits at most compaction_ceiling_seconds; then nothing changes', async () => {
    const { t, conv } = await conversation({ background: false, compaction_ceiling_seconds: 2 });
    openai.enqueue(reply('Fine.', { usage: SMALL }));
    await turn(t, conv, 'Hello.');
    openai.enqueue({ kind: 'hang', ms: 6_000 });
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/did not complete within 2000 ms/);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
    expect(await sessionCount(t, conv)).toBe(0);
  });

  it('native (default): the app-server compacts on its own; the host records it', async () => {
    const { t, conv } = await conversation({ background: false });
    openai.enqueue(reply('Big answer.', { usage: OVER_BOTH }));
    const first = await turn(t, conv, 'Read the whole repository.');
    expect(first.compaction).toBeNull();
    // Codex's pre-turn check sees 92,040 ≥ 90,000: its compaction request first, then the turn.
    openai.enqueue(reply('AUTO SUMMARY of the repository.', { usage: SMALL }), reply('Next.', { usage: SMALL }));
    const second = await turn(t, conv, 'Go on.');
    expect(second.reply.content).toBe('Next.');
    expect(sent().map((r) => [r.kind, r.trigger])).toEqual([
      ['turn', undefined],
      ['compaction', 'auto'],
      ['turn', undefined],
    ]);
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => [r.trigger, r.stats?.tokensBefore])).toEqual([['codex_app_server', 92_000]]);
    expect(await sessionCount(t, conv)).toBe(1);
    expect((await events(t))[0]?.payload).toMatchObject({ runtime: 'codex_app_server', compression_count: 1 });
    expect((await stack.client.settled(t, conv)).compressionCount).toBe(1);
  });

  it('hermes: the host decides on the real reading and asks the app-server to compact', async () => {
    const { t, conv } = await conversation({ background: false, codex_app_server_auto: 'hermes' });
    // 76,000 is over the host's threshold (75,000) and under Codex's own (90,000): only the host can start this one.
    openai.enqueue(
      reply('Long answer.', { usage: { input_tokens: 76_000, output_tokens: 30 } }),
      reply('HOST-REQUESTED SUMMARY.', { usage: SMALL }),
    );
    const first = await turn(t, conv, 'Explain everything.');
    expect(first.compaction?.status).toBe('committed');
    expect(sent().map((r) => [r.kind, r.trigger])).toEqual([
      ['turn', undefined],
      ['compaction', 'manual'],
    ]);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ trigger: 'codex_app_server', id: first.compaction?.compactionId });
    const status = await stack.client.settled(t, conv);
    expect(status.compressionCount).toBe(1);
    expect(status.lastPromptTokens).toBe(0); // the next turn's reading is the verdict
  });

  it('off: the host never starts one', async () => {
    const { t, conv } = await conversation({ background: false, codex_app_server_auto: 'off' });
    openai.enqueue(reply('Long answer.', { usage: { input_tokens: 76_000, output_tokens: 30 } }));
    const first = await turn(t, conv, 'Explain everything.');
    expect(first.compaction).toBeNull();
    expect(sent().map((r) => r.kind)).toEqual(['turn']);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
  });

  it('a killed app-server is started again and the thread resumes', async () => {
    const { t, conv } = await conversation({ background: false });
    openai.enqueue(reply('The port is 8443.', { usage: SMALL }));
    await turn(t, conv, 'Which port does the proxy use?');
    const thread = await threadOf(t, conv);
    const server = await pool.current('codex');
    expect(server?.alive).toBe(true);
    const starts = pool.starts.get('codex') ?? 0;
    process.kill(server?.pid as number, 'SIGKILL');
    await server?.exited;

    openai.enqueue(reply('Still 8443.', { usage: SMALL }));
    const next = await turn(t, conv, 'And after the restart?');
    expect(next.reply.content).toBe('Still 8443.');
    expect(pool.starts.get('codex')).toBe(starts + 1);
    expect(await threadOf(t, conv)).toBe(thread);
    // The new process resumed the thread from CODEX_HOME: its history went with the request.
    expect(sent()[1]?.texts).toEqual(
      expect.arrayContaining(['Which port does the proxy use?', 'The port is 8443.', 'And after the restart?']),
    );
  });
});
