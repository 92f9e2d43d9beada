// Both providers end to end through the workflows (summary and agent turn), with the real `openai` and
// `@anthropic-ai/sdk` clients talking to fake servers on loopback: cache markers on the wire, each error class
// leading to the right retry / non-retry / fallback with nothing lost, and telemetry equal to what the fakes reported.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { SUMMARY_PREFIX } from '../../../engine/index.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { getTenantMarker } from '../../../infra/db/tenants.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import {
  contextTooLong,
  emptyReply,
  rateLimited,
  refusalReply,
  reply,
  serverError,
  toolCallsReply,
  truncatedReply,
  unauthorized,
} from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
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
let anthropic: AnthropicFake;
// Keeps every path of the windows these tests compact: the quality gate (issue #15 §3) asks nothing again.
const SUMMARY = `## Goal\nFix the failing suite.\n## Progress\n### Done\n${Array.from({ length: 8 }, (_, i) => `- read src/module_${i}.ts`).join('\n')}`;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  anthropic = await startAnthropicFake();
  const config = parseConfigText(
    [
      'model: { default: gpt-test, provider: openai }',
      'providers:',
      `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
      `  anthropic: { base_url: "${anthropic.origin}", api_key_env: FAKE_ANTHROPIC_KEY }`,
      'prompt_caching: { cache_ttl: 1h }',
      'auxiliary: { compression: { timeout: 5 } }',
    ].join('\n'),
  );
  const llm = llmDepsFromConfig(
    config,
    { FAKE_OPENAI_KEY: 'sk-openai', FAKE_ANTHROPIC_KEY: 'sk-anthropic' },
    () => undefined,
  );
  stack = await createTestStack({ db: testDb.db, activityDeps: llm });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await anthropic?.close();
  await testDb?.drop();
});
beforeEach(() => {
  openai.requests.length = 0;
  anthropic.requests.length = 0;
});

const tenant = (policy: Record<string, unknown> = {}) => newTenant(testDb.db, policy);

const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };
const CLAUDE = { model: 'claude-sonnet-5-5', provider: 'anthropic', contextLength: 200_000 };

function markerCount(body: unknown): number {
  return (JSON.stringify(body).match(/"cache_control"/g) ?? []).length;
}

describe('summaries through each provider', () => {
  it('OpenAI: the prompt goes as one user message to the main model and the reply becomes the summary', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), GPT);
    openai.enqueue(reply(SUMMARY));
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    const [req] = openai.requests;
    expect(req?.headers.authorization).toBe('Bearer sk-openai');
    expect(req?.body.model).toBe('gpt-test');
    expect(req?.body.messages).toHaveLength(1);
    expect(req?.body.messages[0].role).toBe('user');
    expect(req?.body.messages[0].content).toContain('TURNS TO SUMMARIZE:');
    expect(req?.body.max_tokens ?? req?.body.max_completion_tokens).toBeUndefined();
    const rows = await loadTranscript(testDb.db, t, result.sessionId);
    expect(
      rows.some((r) => JSON.stringify(r.message.content).includes(`${SUMMARY_PREFIX}\\n${SUMMARY.split('\n')[0]}`)),
    ).toBe(true);
  });

  it('Anthropic: Messages API with max_tokens ≥ 2 × budget and the summary stored', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CLAUDE);
    anthropic.enqueue(reply(SUMMARY));
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    const [req] = anthropic.requests;
    expect(req?.path).toBe('/v1/messages');
    expect(req?.body.model).toBe('claude-sonnet-5-5');
    expect(req?.body.max_tokens).toBeGreaterThanOrEqual(4_096);
    expect(req?.body.messages[0].role).toBe('user');
  });
});

describe('summary errors: retry, non-retry, fallback — nothing lost', () => {
  async function compactWith(...steps: Parameters<OpenAIFake['enqueue']>) {
    const t = await tenant();
    const conv = randomUUID();
    const messages = agentTranscript(8);
    await stack.client.submit(t, conv, batch(messages), GPT);
    openai.enqueue(...steps);
    const result = await stack.client.compact(t, conv);
    const rows = await allRows(testDb.db, t);
    // Nothing lost: every original message still stored, in order.
    expect(rows.slice(0, messages.length).map((r) => r.content)).toEqual(messages.map((m) => m.content));
    const [record] = await compactionsOf(testDb.db, t);
    return { result, record: record!, calls: openai.requests.length };
  }

  it('429 with retry-after is retried (after the hinted delay) and then succeeds', async () => {
    const started = Date.now();
    const { result, record, calls } = await compactWith(rateLimited({ 'retry-after': '3' }), reply(SUMMARY));
    expect(result.status).toBe('committed');
    expect(calls).toBe(2);
    expect(record.attempts).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
  });

  it('5xx three times → fallback summary of class error, error text never in the transcript', async () => {
    const { result, record, calls } = await compactWith(serverError(500), serverError(503), serverError(500));
    expect(result.status).toBe('fallback');
    expect(calls).toBe(3);
    expect(record).toMatchObject({ failure_class: 'error', replayable: true });
    const transcript = JSON.stringify(
      (await loadTranscript(testDb.db, record.tenant_id, record.session_id)).map((r) => r.message),
    );
    expect(transcript).toContain('Failure class: error.');
    expect(transcript).not.toContain('The server had an error');
  });

  it.each([
    ['401', unauthorized(), 'error'],
    ['context too long', contextTooLong(), 'error'],
    ['empty reply', emptyReply(), 'empty'],
    ['refusal', refusalReply(), 'error'],
    ['truncated', truncatedReply(), 'error'],
  ] as const)('%s is not retried and falls back (class %s)', async (_name, step, failureClass) => {
    const { result, record, calls } = await compactWith(step);
    expect(result.status).toBe('fallback');
    expect(calls).toBe(1);
    expect(record.failure_class).toBe(failureClass);
  });
});

describe('agent turn (chat backend mode)', () => {
  it('Claude on Anthropic: cache markers on the wire (system + last 3, 1h), tool calls returned, results continue the turn, telemetry as reported', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are a coding agent.' }]), CLAUDE);
    anthropic.enqueue(
      toolCallsReply([{ id: 'toolu_1', name: 'read_file', input: { path: 'src/a.ts' } }], 'Let me look.'),
      reply('The bug is on line 3.', {
        usage: {
          input_tokens: 120,
          output_tokens: 40,
          cache_creation_input_tokens: 300,
          cache_read_input_tokens: 1_500,
        },
      }),
    );
    const first = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: 'Why does the test fail?' }]),
    });
    expect(first.toolCalls).toEqual([
      { id: 'toolu_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/a.ts"}' } },
    ]);
    const req1 = anthropic.requests[0]!;
    expect(req1.body.system).toEqual([
      { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    expect(markerCount(req1.body)).toBeLessThanOrEqual(4);
    expect(markerCount(req1.body)).toBe(2); // system + the only other message

    const second = await stack.client.chatTurn(t, conv, {
      messages: keyed([
        { role: 'tool', tool_call_id: 'toolu_1', name: 'read_file', content: 'const x = 1;\nthrow new Error();' },
      ]),
    });
    expect(second.reply.content).toBe('The bug is on line 3.');
    expect(second.usage).toEqual({
      prompt_tokens: 1_920,
      completion_tokens: 40,
      total_tokens: 1_960,
      cache_read_tokens: 1_500,
      cache_write_tokens: 300,
      uncached_input_tokens: 120,
    });
    const req2 = anthropic.requests[1]!;
    expect(markerCount(req2.body)).toBe(4); // system + last 3 (the tool_result row is marked natively)
    expect(JSON.stringify(req2.body.messages.at(-1))).toContain('tool_result');

    const status = await stack.client.status(t, conv);
    expect(status.promptCaching).toEqual({
      enabled: true,
      reason: 'enabled',
      line: '💾 Prompt caching: ENABLED (Claude via Anthropic, 1h TTL)',
    });
    expect(status.cache.turns).toBe(2);
    expect(status.cache.cacheReadTokens).toBe(1_500);
    expect(status.cache.cacheWriteTokens).toBe(300);
    expect(status.lastPromptTokens).toBe(1_920);
    const rows = await activeTranscript(testDb.db, t, status.sessionId);
    expect(rows.map((r) => r.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    const turns = await withTenant(testDb.db, t, (tx) =>
      tx.selectFrom('turns').selectAll().orderBy('created_at').execute(),
    );
    expect(turns.map((r) => [r.cache_read_tokens, r.cache_write_tokens, r.uncached_input_tokens])).toEqual([
      [0, 0, 1_000],
      [1_500, 300, 120],
    ]);
  });

  it('a non-Claude model gets no cache markers, and caching is reported off with its reason', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'sys' }]), GPT);
    openai.enqueue(reply('hello'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'hi' }]) });
    expect(turn.reply.content).toBe('hello');
    expect(markerCount(openai.requests[0]?.body)).toBe(0);
    expect(turn.status.promptCaching).toMatchObject({
      enabled: false,
      reason: 'not_claude',
      line: '💾 Prompt caching: DISABLED',
    });
  });

  it('a permanent provider error fails the turn, stores no reply, and the conversation goes on', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'sys' }]), GPT);
    openai.enqueue(contextTooLong());
    await expect(
      stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'hi' }]) }),
    ).rejects.toThrow();
    expect(openai.requests).toHaveLength(1);
    const status = await stack.client.sync(t, conv);
    expect((await activeTranscript(testDb.db, t, status.sessionId)).map((r) => r.role)).toEqual(['system', 'user']);
    openai.enqueue(reply('recovered'));
    const next = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'again' }]) });
    expect(next.reply.content).toBe('recovered');
  });

  it('measures cache economics after a compaction: rewrite tokens of the first request, turns until reads recover', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CLAUDE);
    anthropic.enqueue(reply(SUMMARY));
    const compaction = await stack.client.compact(t, conv);
    expect(compaction.status).toBe('committed');
    anthropic.enqueue(
      reply('one', {
        usage: {
          input_tokens: 200,
          output_tokens: 5,
          cache_creation_input_tokens: 5_000,
          cache_read_input_tokens: 400,
        },
      }),
      reply('two', {
        usage: {
          input_tokens: 100,
          output_tokens: 5,
          cache_creation_input_tokens: 200,
          cache_read_input_tokens: 5_400,
        },
      }),
    );
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'next?' }]) });
    // While the recovery is measured, turns run in the gateway; each is counted in order, whether its reply is
    // notified or folded (then the gateway writes a recovery it completes): the status shows it.
    const status1 = await stack.client.sync(t, conv);
    expect(status1.cache.watching).toEqual({
      compactionId: compaction.compactionId,
      turnsSince: 1,
      rewriteTokens: 5_000,
    });
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'and then?' }]) });
    const status2 = await stack.client.sync(t, conv);
    expect(status2.cache.lastRecovery).toEqual({
      compactionId: compaction.compactionId,
      rewriteTokens: 5_000,
      recoveryTurns: 2,
    });
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ cache_rewrite_tokens: 5_000, cache_recovery_turns: 2 });
  });
});

describe('model switching (SPEC §4.5, §4.6)', () => {
  it('the gpt-5.5 Codex autoraise notice is shown once per tenant and persisted', async () => {
    const t = await tenant();
    const codex = { model: 'gpt-5.5', provider: 'openai-codex' };
    // Three conversations of one tenant start at the same moment: exactly one shows the notice.
    const convs = [randomUUID(), randomUUID(), randomUUID()];
    await Promise.all(convs.map((c) => stack.client.submit(t, c, batch([{ role: 'user', content: 'hi' }]), codex)));
    const statuses = await Promise.all(convs.map((c) => stack.client.sync(t, c)));
    expect(statuses[0]!.thresholdTokens).toBe(231_200);
    const shown = statuses.flatMap((s) => s.notices.filter((n) => n.startsWith('Compression for gpt-5.5 on Codex')));
    expect(shown).toHaveLength(1);
    // A later conversation of the same tenant does not repeat it.
    const later = randomUUID();
    await stack.client.submit(t, later, batch([{ role: 'user', content: 'hi' }]), codex);
    const a = await stack.client.sync(t, later);
    expect(a.notices.filter((n) => n.startsWith('Compression for gpt-5.5 on Codex'))).toHaveLength(0);
    expect(await getTenantMarker(testDb.db, t, 'codex_gpt55_autoraise_notice')).toBe('231200');
    const other = await tenant();
    const convB = randomUUID();
    await stack.client.submit(other, convB, batch([{ role: 'user', content: 'hi' }]), codex);
    const b = await stack.client.sync(other, convB);
    expect(b.notices).toContain(
      'Compression for gpt-5.5 on Codex now starts at 85% of its 272,000-token window (about 231,200 tokens). To keep your configured threshold, set compression.codex_gpt55_autoraise: false. To hide this notice, set compression.codex_gpt55_autoraise_notice: false.',
    );
  });
});
