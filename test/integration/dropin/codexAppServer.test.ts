// The drop-in Chat Completions endpoint on a Codex app-server route (issue #13 §2, SPEC §15.2): the real `openai`
// SDK talks to the gateway; the worker's real `codex app-server` (pinned @openai/codex, one process for this file)
// runs each turn on the conversation's thread against the fake Responses server. The client sends its whole history;
// only what is new goes to the thread, the system prompt becomes the thread's developer instructions, every message
// is stored once (the reply under the key the client's next history gives it), a retried request gets the stored
// reply without a new model call, and `stream: true` gets the reply as chunks.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppServerPool } from '../../../infra/codex/pool.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { ensureCodex } from '../../support/clients/codex.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { storedMessages } from './dropinFixtures.js';

let openai: OpenAIFake;
let gw: GatewayHarness;
let pool: AppServerPool;
let codexHome: string;
let key: string;

beforeAll(async () => {
  const codex = ensureCodex();
  openai = await startOpenAIFake();
  codexHome = mkdtempSync(join(tmpdir(), 'dctx-app-server-dropin-'));
  const upstream = 'model_providers.durable_context_upstream';
  const config = {
    [`${upstream}.request_max_retries`]: 0,
    [`${upstream}.stream_max_retries`]: 0,
    model_context_window: 200_000,
    'analytics.enabled': false,
  };
  const provider = { api: 'codex_app_server', command: codex, codex_home: codexHome, base_url: openai.baseURL, config };
  const yaml = `providers:\n  codex: ${JSON.stringify({ ...provider, models: ['gpt-5.6'] })}\n`;
  pool = new AppServerPool({ ...process.env, RUST_LOG: 'warn' });
  const { summarizerFor: _unused, ...llm } = llmDepsFromConfig(parseConfigText(yaml), process.env, () => undefined);
  gw = await startGatewayHarness({ stack: { activityDeps: { ...llm, appServers: pool } } });
  key = (await gw.tenant()).key;
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await pool?.close();
  await openai?.close();
  if (codexHome) rmSync(codexHome, { recursive: true, force: true });
});
beforeEach(() => {
  openai.requests.length = 0;
});

const sdk = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

/** What the app-server sent the fake for each model call: its input's texts and its instructions. */
function sent() {
  return openai.responsesRequests().map((r) => {
    const body = r.body as { input?: Array<Record<string, any>> };
    return (body.input ?? []).flatMap((item) =>
      Array.isArray(item.content) ? item.content.map((c: { text?: string }) => c.text ?? '') : [],
    );
  });
}

describe('drop-in Chat Completions on a Codex app-server route (real binary)', () => {
  it('only the new message goes to the thread; each message is stored once; a retry is answered from the log', async () => {
    const system = `You answer in one line. ${randomUUID()}`;
    const opening: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: system },
      { role: 'user', content: 'Name the config file.' },
    ];
    openai.enqueue(reply('It is codex.toml.'));
    const first = await sdk().chat.completions.create({ model: 'gpt-5.6', messages: opening });
    expect(first.choices[0]?.message.content).toBe('It is codex.toml.');
    const conversationId = await conversationOf(system);
    // The system prompt went to the thread as developer instructions, with the question.
    expect(sent()[0]).toEqual(expect.arrayContaining(['Name the config file.']));
    expect(sent()[0]?.some((text) => text.includes(system))).toBe(true);

    const history: OpenAI.Chat.ChatCompletionMessageParam[] = [
      ...opening,
      { role: 'assistant', content: 'It is codex.toml.' },
      { role: 'user', content: 'And its directory?' },
    ];
    openai.enqueue(reply('CODEX_HOME.', { usage: { input_tokens: 2_000, output_tokens: 5 } }));
    const second = await sdk().chat.completions.create({ model: 'gpt-5.6', messages: history });
    expect(second.choices[0]?.message.content).toBe('CODEX_HOME.');
    expect(second.usage?.prompt_tokens).toBe(2_000);
    // The thread held the first exchange; the gateway sent only the new question.
    expect(sent()[1]).toEqual(
      expect.arrayContaining(['Name the config file.', 'It is codex.toml.', 'And its directory?']),
    );
    expect(sent()[1]?.filter((text) => text === 'And its directory?')).toHaveLength(1);

    // The same request again (its answer was lost): the stored reply, no model call.
    const retried = await sdk().chat.completions.create({ model: 'gpt-5.6', messages: history });
    expect(retried.choices[0]?.message.content).toBe('CODEX_HOME.');
    expect(openai.responsesRequests()).toHaveLength(2);

    const stored = await storedMessages(gw, key, conversationId);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ['system', system],
      ['user', 'Name the config file.'],
      ['assistant', 'It is codex.toml.'],
      ['user', 'And its directory?'],
      ['assistant', 'CODEX_HOME.'],
    ]);

    // Streamed: the reply as chunks, stored once more at its place.
    openai.enqueue(reply('Yes, under CODEX_HOME.'));
    const stream = await sdk().chat.completions.create({
      model: 'gpt-5.6',
      stream: true,
      stream_options: { include_usage: true },
      messages: [...history, { role: 'assistant', content: 'CODEX_HOME.' }, { role: 'user', content: 'Sure?' }],
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Yes, under CODEX_HOME.');
    expect(usage?.total_tokens).toBeGreaterThan(0);
    expect((await storedMessages(gw, key, conversationId)).map((m) => m.content).slice(-2)).toEqual([
      'Sure?',
      'Yes, under CODEX_HOME.',
    ]);
  });

  it('an earlier state of the conversation is refused, naming the field: a thread cannot branch', async () => {
    const system = `Short answers. ${randomUUID()}`;
    const opening: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: system },
      { role: 'user', content: 'One?' },
    ];
    openai.enqueue(reply('1'), reply('2'));
    await sdk().chat.completions.create({ model: 'gpt-5.6', messages: opening });
    await sdk().chat.completions.create({
      model: 'gpt-5.6',
      messages: [...opening, { role: 'assistant', content: '1' }, { role: 'user', content: 'Two?' }],
    });
    const earlier = sdk().chat.completions.create({
      model: 'gpt-5.6',
      messages: [...opening, { role: 'assistant', content: '1' }],
    });
    await expect(earlier).rejects.toMatchObject({ status: 400, param: 'messages' });
    expect(openai.responsesRequests()).toHaveLength(2);
  });
  it('the Responses endpoint refuses such a model before storing anything, naming the field', async () => {
    const marker = `Responses to an app-server ${randomUUID()}`;
    const refused = sdk().responses.create({ model: 'gpt-5.6', input: marker });
    await expect(refused).rejects.toMatchObject({ status: 400, param: 'model' });
    const stored = await gw.testDb.db.selectFrom('messages').select('id').where('content', '=', marker).execute();
    expect(stored).toHaveLength(0);
    expect(openai.responsesRequests()).toHaveLength(0);
  });
});

/** The conversation the gateway derived for the history opened by `system` (listed by its first message). */
async function conversationOf(system: string): Promise<string> {
  const listed = await gw.testDb.db
    .selectFrom('messages')
    .select('conversation_id')
    .where('content', '=', system)
    .executeTakeFirstOrThrow();
  return listed.conversation_id;
}
