// The model switch over HTTP (issue #14 §3, SPEC §4.3, §4.4, §4.6) on the real services: a window the
// host may not use is refused naming the field, before anything changes; a switch re-derives the thresholds and shows
// the cache warning; a context over the new threshold compacts before the next turn. The CLI's `dctx model`:
// test/integration/cli/cli.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_MODEL_SWITCH } from '../../../engine/index.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness();
});
afterAll(async () => {
  await gw?.close();
});

async function conversation(key: string): Promise<string> {
  const created = await gw.call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
  expect(created.status).toBe(201);
  const conv = created.json.conversationId as string;
  // 25 messages with long tool outputs (a compaction saves tokens) and a reading of 90,000 tokens: under the 150,000
  // threshold of a 200,000 window.
  const messages = keyed(agentTranscript(6, { toolOutputChars: 4_000 }), randomUUID());
  const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
    messages,
    usage: { prompt_tokens: 90_000 },
    wait: true,
  });
  expect(posted.status).toBe(200);
  return conv;
}

describe('POST /v1/conversations/:id/model', () => {
  it('refuses a model or window the host may not use, naming the field; nothing changes', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key);
    const alias = await gw.call('POST', `/v1/conversations/${conv}/model`, key, { model: 'gpt-5.5-900k' });
    expect(alias.status).toBe(400);
    expect(alias.json.message).toBe("model: Model 'gpt-5.5-900k' is not available: 'gpt-5.5' has no -900k variant.");
    const small = await gw.call('POST', `/v1/conversations/${conv}/model`, key, {
      model: 'tiny',
      contextLength: 32_000,
    });
    expect(small.status).toBe(400);
    expect(small.json.message).toMatch(/^contextLength: Model 'tiny' has a context window of 32,000 tokens/);
    const unnamed = await gw.call('POST', `/v1/conversations/${conv}/model`, key, { provider: 'openai' });
    expect(unnamed.status).toBe(400);
    expect(unnamed.json.message).toContain('model');
    expect((await gw.call('POST', '/v1/conversations/nope/model', key, { model: 'acme-chat' })).status).toBe(404);
    const status = await gw.call('GET', `/v1/conversations/${conv}/status`, key);
    expect(status.json).toMatchObject({ model: 'acme-chat', contextLength: 200_000, compressionCount: 0 });
  });

  it('re-derives the thresholds, shows the cache warning, and compacts before the next turn', async () => {
    const { key } = await gw.tenant();
    const conv = await conversation(key);
    const switched = await gw.call('POST', `/v1/conversations/${conv}/model`, key, {
      model: 'acme-small',
      contextLength: 100_000,
    });
    expect(switched.status, switched.text).toBe(200);
    expect(switched.json).toMatchObject({ model: 'acme-small', contextLength: 100_000, thresholdTokens: 75_000 });
    expect(switched.json.notices).toContain(NOTICE_MODEL_SWITCH);
    expect(switched.json.compressionCount).toBe(0);

    // The reading of 90,000 is kept (SPEC §7.5): 90 % of the new window, over the 85 % of gateway hygiene (SPEC §11),
    // so the next user message is compacted before (blocking, in place).
    const next = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: keyed([{ role: 'user', content: 'And now the last module?' }], randomUUID()),
      wait: true,
    });
    expect(next.status).toBe(200);
    const status = await gw.call('GET', `/v1/conversations/${conv}/status`, key);
    expect(status.json.compressionCount).toBe(1);
    expect(status.json.lastCompaction).toMatchObject({ trigger: 'hygiene', status: 'committed' });
    expect(status.json.lastPromptTokens).toBe(0);
  });
});
