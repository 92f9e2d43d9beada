// Anthropic compaction blocks as the Phase 3 backend (issue #13 §3, SPEC §19 `summary_backend: anthropic_native`) on
// the real services, the real `@anthropic-ai/sdk` talking to the fake Anthropic server, which enforces the beta's
// documented limits (the beta header, the block first and unchanged, never with context_management, no unfinished
// turn at the end of a compaction request): the compaction request and its block, the summary row holding the block's
// readable text (searchable), the next turn starting from the block in place of the rows it summarised, the next
// compaction starting from it, each fallback to the local summariser with its reason, a switch to another route
// getting the text, and the cost read from `usage.iterations`.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { archivePointerLine, type ChatMessage, SUMMARY_PREFIX, SYSTEM_NOTE } from '../../../engine/index.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import {
  type AnthropicFake,
  type AnthropicFakeOptions,
  COMPACTION_BETA,
  fakeBlockSignature,
  startAnthropicFake,
} from '../../support/fakes/anthropicFake.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { compactionBlockReply, httpError, reply } from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, batch, compactionsOf, keyed, newTenant, searchArchived } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let anthropic: AnthropicFake;
let openai: OpenAIFake;
const fakeOptions: AnthropicFakeOptions = {};

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  anthropic = await startAnthropicFake(fakeOptions);
  openai = await startOpenAIFake();
  const yaml = [
    'model: { default: claude-sonnet-5-5, provider: anthropic }',
    'providers:',
    `  anthropic: { base_url: "${anthropic.origin}", api_key_env: FAKE_ANTHROPIC_KEY }`,
    `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
    'auxiliary: { compression: { timeout: 5 } }',
  ].join('\n');
  const keys = { FAKE_ANTHROPIC_KEY: 'sk-anthropic', FAKE_OPENAI_KEY: 'sk-openai' };
  stack = await createTestStack({
    db: testDb.db,
    activityDeps: llmDepsFromConfig(parseConfigText(yaml), keys, () => {}),
  });
});
afterAll(async () => {
  await stack?.close();
  await anthropic?.close();
  await openai?.close();
  await testDb?.drop();
});
beforeEach(() => {
  anthropic.requests.length = 0;
  openai.requests.length = 0;
});
afterEach(() => {
  fakeOptions.refuseCompactionBeta = false;
});

const CLAUDE = { model: 'claude-sonnet-5-5', provider: 'anthropic', contextLength: 200_000 };
const NATIVE = { summary_backend: 'anthropic_native', protect_first_n: 3, protect_last_n: 4 };
const SYSTEM = 'You are a careful assistant.';
const CONTENT =
  '## Goal\nMigrate the billing tables.\n## Progress\n### Done\n- steps one and two (zanzibar checkpoint)';
const LOCAL = '## Goal\nMigrate the billing tables.\n## Progress\n### Done\n- written by the local summariser';

function rounds(from: number, to: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let n = from; n <= to; n++) {
    out.push({ role: 'user', content: `Step ${n}, please.` }, { role: 'assistant', content: `Step ${n} is done.` });
  }
  return out;
}

/** System, a head exchange, steps 1–4: head = rows 0–2, window = steps 1–2, tail = steps 3–4. */
async function conversation(policy: Record<string, unknown> = NATIVE) {
  const t = await newTenant(testDb.db, policy);
  const conv = randomUUID();
  const opening: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Plan the billing migration.' },
    { role: 'assistant', content: 'First we inventory the tables.' },
  ];
  await stack.client.submit(t, conv, batch([...opening, ...rounds(1, 4)]), CLAUDE);
  return { t, conv };
}

const bodyOf = (i: number) => anthropic.messageRequests()[i]?.body as Record<string, any>;
const betaOf = (i: number) => String(anthropic.messageRequests()[i]?.headers['anthropic-beta'] ?? '');
const texts = (messages: Array<{ content: unknown }>) =>
  messages.flatMap((m) =>
    typeof m.content === 'string'
      ? [m.content]
      : (m.content as Array<{ type: string; text?: string }>).flatMap((b) => (b.type === 'text' ? [b.text] : [])),
  );

async function sessionFlag(t: string, sessionId: string): Promise<boolean> {
  const row = await withTenant(testDb.db, t, (tx) =>
    tx.selectFrom('sessions').select('anthropic_native_disabled').where('id', '=', sessionId).executeTakeFirstOrThrow(),
  );
  return row.anthropic_native_disabled;
}

describe('summary_backend: anthropic_native', () => {
  it('summarises into a signed block: the request, the record, the searchable summary row, the cost', async () => {
    const { t, conv } = await conversation();
    anthropic.enqueue(compactionBlockReply(CONTENT, { usage: { input_tokens: 9_100, output_tokens: 640 } }));
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');

    expect(anthropic.messageRequests()).toHaveLength(1);
    expect(betaOf(0)).toContain(COMPACTION_BETA);
    const request = bodyOf(0);
    expect(request.compaction.type).toBe('summarize');
    expect(request.compaction.instructions).toContain('## Critical Context');
    expect(request.compaction.instructions).toMatch(/Target ~\d+ tokens\./);
    expect(request.context_management).toBeUndefined();
    expect(request.system).toBe(SYSTEM);
    // The head's exchange and the window: what the block will stand in for.
    expect(texts(request.messages)).toEqual([
      'Plan the billing migration.',
      'First we inventory the tables.',
      'Step 1, please.',
      'Step 1 is done.',
      'Step 2, please.',
      'Step 2 is done.',
    ]);

    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({
      summary_backend: 'anthropic_native',
      native_fallback: null,
      summary_usage: { input_tokens: 9_100, output_tokens: 640, cache_read_tokens: 0, cache_write_tokens: 0 },
    });
    expect(record?.native_summary?.block).toEqual({
      type: 'compaction',
      content: CONTENT,
      encrypted_content: 'opaque-state',
      signature: fakeBlockSignature(CONTENT, 'opaque-state'),
      tool_changes: [],
    });
    expect(record?.native_summary?.origin).toMatchObject({ provider: 'anthropic', baseUrl: anthropic.origin });
    expect(record?.summary_body).toBe(`${CONTENT}\n${archivePointerLine(conv)}`);
    const rows = await activeTranscript(testDb.db, t, result.sessionId);
    expect(rows.find((r) => r.summary_body !== null)?.content).toContain(`${SUMMARY_PREFIX}\n${CONTENT}`);
    // The readable text is searchable like any summary; the encrypted state is nowhere in the transcript.
    expect((await searchArchived(testDb.db, t, 'zanzibar')).map((r) => r.active)).toEqual([true]);
    expect(JSON.stringify(rows)).not.toContain('opaque-state');
  });

  it('the next turn starts from the block, in place of the rows it summarised; the next compaction too', async () => {
    const { t, conv } = await conversation();
    anthropic.enqueue(compactionBlockReply(CONTENT));
    await stack.client.compact(t, conv);
    anthropic.requests.length = 0;

    anthropic.enqueue(reply('Step 5 is planned.'));
    const turn = await stack.client.chatTurn(t, conv, {
      messages: keyed([{ role: 'user', content: 'What about step 5?' }], 'g1'),
    });
    expect(turn.reply.content).toBe('Step 5 is planned.');
    expect(betaOf(0)).toContain(COMPACTION_BETA);
    const sent = bodyOf(0);
    const system = texts([{ content: sent.system }]).join('\n');
    expect(system).toContain(SYSTEM);
    expect(system).toContain(SYSTEM_NOTE);
    // The block first, verbatim (the fake refuses a changed signature), the archive pointer after it.
    expect(sent.messages[0]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'compaction',
          content: CONTENT,
          encrypted_content: 'opaque-state',
          signature: fakeBlockSignature(CONTENT, 'opaque-state'),
          tool_changes: [],
        },
        { type: 'text', text: archivePointerLine(conv) },
      ],
    });
    // The summary was merged into "Step 3, please." (SPEC §8.6.2): its own text follows; the head is not sent.
    expect(texts(sent.messages.slice(1))).toEqual([
      'Step 3, please.',
      'Step 3 is done.',
      'Step 4, please.',
      'Step 4 is done.',
      'What about step 5?',
    ]);

    // More turns, then a second compaction: its request starts from the first block.
    await stack.client.submit(t, conv, batch(rounds(6, 9)), CLAUDE);
    anthropic.requests.length = 0;
    const SECOND = '## Goal\nMigrate the billing tables.\n## Progress\n### Done\n- steps one to seven';
    anthropic.enqueue(compactionBlockReply(SECOND, { encrypted: 'opaque-state-2' }));
    const second = await stack.client.compact(t, conv);
    expect(second.status).toBe('committed');
    const request = bodyOf(0);
    expect(request.messages[0].content[0]).toMatchObject({ type: 'compaction', content: CONTENT });
    expect(request.compaction.instructions).toContain('The conversation begins with the summary of its earlier turns');
    expect(texts(request.messages).slice(0, 2)).toEqual([archivePointerLine(conv), 'Step 3, please.']);
    expect(texts(request.messages)).not.toContain('Plan the billing migration.');
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => r.native_summary?.block.encrypted_content)).toEqual(['opaque-state', 'opaque-state-2']);
  });

  it("the quality gate: a block that drops the window's identifiers is asked for again; what is missing goes after it", async () => {
    const t = await newTenant(testDb.db, NATIVE);
    const conv = randomUUID();
    const constraint = 'Never touch the prod-eu cluster.';
    await stack.client.submit(
      t,
      conv,
      batch([
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Plan the billing migration.' },
        { role: 'assistant', content: 'First we inventory the tables.' },
        { role: 'user', content: `${constraint} Start with \`ops/billing.yaml\`.` },
        { role: 'assistant', content: 'Read it.' },
        ...rounds(2, 4),
      ]),
      CLAUDE,
    );
    anthropic.enqueue(
      compactionBlockReply(CONTENT, { usage: { input_tokens: 1_000, output_tokens: 100 } }),
      compactionBlockReply(CONTENT, { usage: { input_tokens: 1_100, output_tokens: 90 } }),
    );
    await stack.client.compact(t, conv);
    expect(anthropic.messageRequests()).toHaveLength(2);
    expect(bodyOf(1).compaction.instructions).toContain('MISSING ITEMS:');
    expect(bodyOf(1).compaction.instructions).toContain(`- User constraint: ${constraint}`);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record?.summary_usage).toMatchObject({ input_tokens: 2_100, output_tokens: 190 });
    expect(record?.retention_before).toBeLessThan(1);
    expect(record?.retention_after).toBe(1);
    expect(record?.summary_body?.startsWith(CONTENT)).toBe(true);
    expect(record?.summary_body).toContain('- `ops/billing.yaml`');

    anthropic.requests.length = 0;
    anthropic.enqueue(reply('Ok.'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'Go on.' }], 'g3') });
    const lead = bodyOf(0).messages[0].content as Array<{ type: string; text?: string }>;
    expect(lead[0]?.type).toBe('compaction');
    expect(lead[1]?.text).toContain(`- User constraint: ${constraint}`);
    expect(lead[1]?.text).toContain(archivePointerLine(conv));
  });

  it.each([
    ['an answer without a block', reply('Here is a summary in prose.'), 'no_block'],
    ['a failed compaction (null content)', compactionBlockReply(null), 'no_block'],
    [
      '529 compaction_unavailable',
      httpError(529, 'Compaction is unavailable.', { code: 'compaction_unavailable' }),
      'request_refused',
    ],
    [
      'a refused request (400 compaction_nothing_to_summarize)',
      httpError(400, 'nothing', { code: 'compaction_nothing_to_summarize' }),
      'request_refused',
    ],
  ] as const)('%s: the local summariser writes the summary; the reason is recorded', async (_, answer, reason) => {
    const { t, conv } = await conversation();
    anthropic.enqueue(answer, reply(LOCAL));
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ summary_backend: 'llm', native_fallback: reason, native_summary: null });
    expect(record?.summary_body?.startsWith(LOCAL)).toBe(true);
    // The second request is the local summary prompt: one user message, no compaction field.
    expect(bodyOf(1).compaction).toBeUndefined();
    expect(bodyOf(1).messages[0].content).toContain('TURNS TO SUMMARIZE:');
    expect(betaOf(1)).not.toContain(COMPACTION_BETA);
  });

  it('a refused beta turns it off for the session: later compactions go straight to the local summariser', async () => {
    const { t, conv } = await conversation();
    fakeOptions.refuseCompactionBeta = true;
    anthropic.enqueue(reply(LOCAL));
    const first = await stack.client.compact(t, conv);
    expect(first.status).toBe('committed');
    expect(await sessionFlag(t, first.sessionId)).toBe(true);
    expect(anthropic.messageRequests()).toHaveLength(2);
    expect(bodyOf(0).compaction).toBeDefined();
    expect(bodyOf(1).compaction).toBeUndefined();

    await stack.client.submit(t, conv, batch(rounds(5, 8)), CLAUDE);
    anthropic.requests.length = 0;
    anthropic.enqueue(reply(LOCAL));
    await stack.client.compact(t, conv);
    expect(anthropic.messageRequests()).toHaveLength(1);
    expect(bodyOf(0).compaction).toBeUndefined();
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => r.native_fallback)).toEqual(['beta_refused', 'disabled_for_session']);
  });

  it('a route without blocks (OpenAI) summarises locally; a switch to it sends the summary text and the head', async () => {
    // The summary route follows the main model (SPEC §2.3): an OpenAI conversation has no block to ask for.
    const t = await newTenant(testDb.db, NATIVE);
    const conv = randomUUID();
    const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };
    await stack.client.submit(t, conv, batch([{ role: 'system', content: SYSTEM }, ...rounds(1, 6)]), GPT);
    openai.enqueue(reply(LOCAL));
    await stack.client.compact(t, conv);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ summary_backend: 'llm', native_fallback: 'unsupported_route' });
    expect(anthropic.messageRequests()).toHaveLength(0);

    // An Anthropic-compacted conversation switched to OpenAI: the readable summary goes, and the head with it.
    const native = await conversation();
    anthropic.enqueue(compactionBlockReply(CONTENT));
    await stack.client.compact(native.t, native.conv);
    await stack.client.switchModel(native.t, native.conv, { model: 'gpt-test', provider: 'openai' });
    openai.requests.length = 0;
    openai.enqueue(reply('Fine.'));
    await stack.client.chatTurn(native.t, native.conv, { messages: keyed([{ role: 'user', content: 'Next?' }], 'g2') });
    const sent = openai.requests[0]?.body as { messages: Array<{ content: string }> };
    const joined = JSON.stringify(sent.messages);
    expect(joined).toContain('Plan the billing migration.');
    expect(joined).toContain('zanzibar checkpoint');
    expect(joined).not.toContain('opaque-state');
  });
});
