// `respond: true` with `stream: true` on the messages route (issue #12, workers/gateway/turnStream.ts): the reply's
// text arrives as the model writes it (OpenAI and Anthropic providers, the real SDKs streaming from the fakes), the
// stream ends with the stored reply; a turn the workflow runs is relayed from the worker's model call (LISTEN/NOTIFY);
// refusals before the messages are stored stay JSON errors, failures after them are error events; a model call that
// breaks off mid-stream is discarded and the retry's text follows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import type { FakeServer } from '../../support/fakes/fakeServer.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { httpError, reply, toolCallsReply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

let openai: OpenAIFake;
let anthropic: AnthropicFake;
let gw: GatewayHarness;
beforeAll(async () => {
  openai = await startOpenAIFake();
  anthropic = await startAnthropicFake();
  const config = parseConfigText(
    [
      'model: { default: gpt-test, provider: openai }',
      'providers:',
      `  openai: { base_url: "${openai.origin}/v1", api_key_env: OPENAI_KEY, models: [gpt-test] }`,
      `  anthropic: { kind: anthropic, base_url: "${anthropic.origin}", api_key_env: ANTHROPIC_KEY }`,
    ].join('\n'),
  );
  const llm = llmDepsFromConfig(config, { OPENAI_KEY: 'sk-o', ANTHROPIC_KEY: 'sk-a' }, () => undefined);
  gw = await startGatewayHarness({ stack: { activityDeps: llm } });
});
afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await anthropic?.close();
});

interface Heard {
  event: string;
  data: any;
  /** Streamed answers the fake was still writing when the event arrived. */
  upstreamStreaming: number;
}

/** POST …/messages with `stream: true`: the response, and its events as they arrived. */
async function streamTurn(
  key: string,
  conversationId: string,
  body: Record<string, unknown>,
  upstream: FakeServer,
): Promise<{ status: number; contentType: string | null; events: Heard[]; json: any }> {
  const res = await fetch(`${gw.url}/v1/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ respond: true, stream: true, ...body }),
  });
  const contentType = res.headers.get('content-type');
  if (!contentType?.startsWith('text/event-stream')) {
    return { status: res.status, contentType, events: [], json: await res.json() };
  }
  const events: Heard[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      if (frame.startsWith(':')) continue;
      const event = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? 'null');
      events.push({ event, data, upstreamStreaming: upstream.streaming() });
    }
  }
  expect(buffer).toBe('');
  return { status: res.status, contentType, events, json: null };
}

async function conversation(key: string, model: string, provider: string): Promise<string> {
  const created = await gw.call('POST', '/v1/conversations', key, { model, provider, contextLength: 200_000 });
  expect(created.status, created.text).toBe(201);
  return created.json.conversationId;
}

const user = (content: string, idempotencyKey: string) => [{ message: { role: 'user', content }, idempotencyKey }];
const deltas = (events: Heard[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.content as string);

async function stored(key: string, conversationId: string): Promise<Array<Record<string, any>>> {
  const res = await gw.call('GET', `/v1/conversations/${conversationId}/messages`, key);
  return res.json.messages;
}

const FIRST = 'Ready when you are: all nine nodes answer.';

/**
 * The conversation's first turn, streamed: the workflow runs it (the tenant's `background` policy is unknown until
 * its first publication, workflows/conversation/quiet.ts) and its model call, in the worker, publishes the text as
 * it is written; the gateway relays it (infra/db/turnText.ts). Later turns run in the gateway.
 */
async function firstTurn(key: string, conv: string, upstream: OpenAIFake | AnthropicFake): Promise<void> {
  upstream.enqueue(reply(FIRST, { eventGapMs: 60 }));
  const res = await streamTurn(key, conv, { messages: user('Are you there?', 'first') }, upstream);
  const pieces = deltas(res.events);
  expect(pieces.length).toBeGreaterThan(1);
  expect(pieces.join('')).toBe(FIRST);
  // Relayed while the provider was still writing the rest.
  expect(res.events.find((e) => e.event === 'delta')?.upstreamStreaming).toBe(1);
  expect(res.events.map((e) => e.event)).toEqual(['accepted', ...pieces.map(() => 'delta'), 'reply']);
  expect(res.events.at(-1)?.data.reply.content).toBe(FIRST);
}

describe('a streamed chat turn', () => {
  it('relays the OpenAI model’s text as it is written, then answers the stored reply', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'gpt-test', 'openai');
    await firstTurn(key, conv, openai);
    expect(openai.chatRequests().at(-1)?.body.stream).toBe(true); // the workflow's call, streamed for the relay
    const text = 'The rollout finished cleanly on all nine nodes.';
    openai.enqueue(reply(text, { eventGapMs: 120 }));
    const res = await streamTurn(key, conv, { messages: user('How did the rollout go?', 'u1') }, openai);
    expect(res.status).toBe(200);
    expect(res.events[0]).toMatchObject({ event: 'accepted', data: { accepted: 1, conversationId: conv } });
    const pieces = deltas(res.events);
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.join('')).toBe(text);
    // The first piece reached the client while the provider was still writing the rest.
    expect(res.events.find((e) => e.event === 'delta')?.upstreamStreaming).toBe(1);
    const last = res.events.at(-1) as Heard;
    expect(last.event).toBe('reply');
    expect(last.data).toMatchObject({
      accepted: 1,
      reply: { role: 'assistant', content: text },
      toolCalls: [],
      finishReason: 'stop',
      usage: { prompt_tokens: 1_200, completion_tokens: 80 },
    });
    expect(res.events.map((e) => e.event)).toEqual(['accepted', ...pieces.map(() => 'delta'), 'reply']);
    // Upstream: streamed, with the usage chunk asked for (the store needs the reading).
    const sent = openai.chatRequests().at(-1)?.body;
    expect(sent).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const rows = await stored(key, conv);
    expect(rows.map((r) => r.message.content)).toEqual(['Are you there?', FIRST, 'How did the rollout go?', text]);
    expect(rows[3]?.id).toBe(last.data.replyMessageId);
    const status = await gw.call('GET', `/v1/conversations/${conv}/status`, key);
    expect(status.json.lastPromptTokens).toBe(1_200);
  });

  it('relays the Anthropic model’s text and ends with its tool calls', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'claude-sonnet-5', 'anthropic');
    await firstTurn(key, conv, anthropic);
    anthropic.enqueue({
      ...toolCallsReply([{ id: 'toolu_1', name: 'read_file', input: { path: 'deploy/values.yaml' } }], 'Let me look.'),
      eventGapMs: 80,
    });
    const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }];
    const res = await streamTurn(key, conv, { messages: user('Check the values file', 'u1'), tools }, anthropic);
    expect(res.events[0]?.event).toBe('accepted');
    expect(deltas(res.events).join('')).toBe('Let me look.');
    const last = res.events.at(-1) as Heard;
    expect(last.event).toBe('reply');
    expect(last.data.finishReason).toBe('tool_calls');
    expect(last.data.toolCalls).toEqual([
      { id: 'toolu_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"deploy/values.yaml"}' } },
    ]);
    expect(anthropic.messageRequests().at(-1)?.body.stream).toBe(true);
    expect((await stored(key, conv)).at(-1)?.message.tool_calls?.[0]?.id).toBe('toolu_1');
  });

  it('refuses as JSON before the messages are stored, and reports a later failure as an error event', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'gpt-test', 'openai');
    const noRespond = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: user('x', 'n1'),
      stream: true,
    });
    expect(noRespond.status).toBe(400);
    expect(noRespond.json.message).toBe('stream needs respond: true');
    const unknown = await streamTurn(key, 'no-such-conversation', { messages: user('x', 'n2') }, openai);
    expect(unknown.status).toBe(404);
    expect(unknown.contentType).toContain('application/json');
    const badRole = await streamTurn(
      key,
      conv,
      { messages: [{ message: { role: 'robot' }, idempotencyKey: 'b' }] },
      openai,
    );
    expect(badRole.status).toBe(400);
    expect(await stored(key, conv)).toEqual([]);

    openai.enqueue(httpError(400, 'Invalid value for messages: unsupported content'));
    const refused = await streamTurn(key, conv, { messages: user('Hello there', 'u1') }, openai);
    expect(refused.status).toBe(200);
    expect(refused.events.map((e) => e.event)).toEqual(['accepted', 'error']);
    expect(refused.events[1]?.data.status).toBe(422);
    expect(refused.events[1]?.data.message).toContain('HTTP 400');
    // Accepted means stored: the user's message stays.
    expect((await stored(key, conv)).map((r) => r.message.content)).toEqual(['Hello there']);
  });

  it('discards the text of a model call that broke off; the workflow’s retry is relayed', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'gpt-test', 'openai');
    await firstTurn(key, conv, openai);
    const retried = 'Both replicas are healthy again.';
    openai.enqueue(reply('Replica two is still restarting because', { eventGapMs: 40, cutAfterEvents: 4 }));
    openai.enqueue(reply(retried));
    const res = await streamTurn(key, conv, { messages: user('Are the replicas healthy?', 'u1') }, openai);
    const names = res.events.map((e) => e.event);
    const discardAt = names.indexOf('discard');
    expect(discardAt).toBeGreaterThan(1); // text was heard before the call broke off
    expect(names.at(-1)).toBe('reply');
    expect(names.slice(discardAt + 1, -1).every((n) => n === 'delta')).toBe(true);
    expect(deltas(res.events.slice(discardAt)).join('')).toBe(retried);
    expect(res.events.at(-1)?.data.reply.content).toBe(retried);
    expect((await stored(key, conv)).map((r) => r.message.content)).toEqual([
      'Are you there?',
      FIRST,
      'Are the replicas healthy?',
      retried,
    ]);
  });

  it('a retry of the workflow’s model call starts its text over', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'gpt-test', 'openai');
    const retried = 'Ready: the second attempt answers.';
    openai.enqueue(reply('Ready, though this attempt breaks off before', { eventGapMs: 40, cutAfterEvents: 4 }));
    openai.enqueue(reply(retried, { eventGapMs: 20 }));
    const res = await streamTurn(key, conv, { messages: user('Are you there?', 'first') }, openai);
    const names = res.events.map((e) => e.event);
    const discardAt = names.indexOf('discard');
    expect(names.slice(0, 2)).toEqual(['accepted', 'delta']); // the first attempt's text, relayed
    expect(discardAt).toBeGreaterThan(1);
    expect(names.lastIndexOf('discard')).toBe(discardAt);
    expect(deltas(res.events.slice(discardAt)).join('')).toBe(retried);
    expect(res.events.at(-1)).toMatchObject({ event: 'reply', data: { reply: { content: retried } } });
    expect((await stored(key, conv)).map((r) => r.message.content)).toEqual(['Are you there?', retried]);
  });

  it('runs on when the client goes away: the reply is stored and a retry answers it', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key, 'gpt-test', 'openai');
    await firstTurn(key, conv, openai);
    const text = 'The migration is complete and verified.';
    openai.enqueue(reply(text, { eventGapMs: 100 }));
    const abort = new AbortController();
    const res = await fetch(`${gw.url}/v1/conversations/${conv}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ respond: true, stream: true, messages: user('Is the migration done?', 'u1') }),
      signal: abort.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let heard = '';
    while (!heard.includes('event: delta')) heard += new TextDecoder().decode((await reader.read()).value);
    abort.abort(); // gone mid-reply
    const deadline = Date.now() + 10_000;
    while ((await stored(key, conv)).length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await stored(key, conv)).map((r) => r.message.content)).toEqual([
      'Are you there?',
      FIRST,
      'Is the migration done?',
      text,
    ]);
    const calls = openai.chatRequests().length;
    const retried = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      respond: true,
      messages: user('Is the migration done?', 'u1'),
    });
    expect(retried.status).toBe(200);
    expect(retried.json.reply.content).toBe(text);
    expect(openai.chatRequests().length).toBe(calls); // no second model call
  });
});
