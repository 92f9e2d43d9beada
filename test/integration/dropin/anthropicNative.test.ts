// Anthropic compaction blocks through the drop-in Messages endpoint (issue #13 §3, SPEC §19 `anthropic_native`): the
// real `@anthropic-ai/sdk` talks to the gateway, the fake Anthropic server (which refuses a block that is not first,
// changed or sent without its beta) stands behind it. A conversation a block summarised goes upstream from that block:
// the block first, the rows it stands for left out, the beta added to the client's own; the compactions API shows
// who wrote the summary and what it cost.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnthropicFake, COMPACTION_BETA } from '../../support/fakes/anthropicFake.js';
import { compactionBlockReply, reply } from '../../support/fakes/script.js';
import type { GatewayHarness } from '../../support/harness/gateway.js';
import { DROPIN_CLAUDE, startAnthropicDropin, storedMessages } from './dropinFixtures.js';

let anthropic: AnthropicFake;
let gw: GatewayHarness;

beforeAll(async () => {
  ({ anthropic, gw } = await startAnthropicDropin());
});
afterAll(async () => {
  await gw?.close();
  await anthropic?.close();
});

const CONTENT = '## Goal\nKeep the garden alive.\n## Progress\n### Done\n- questions one and two (marigold notes)';

describe('POST /v1/messages after an anthropic_native compaction', () => {
  it('sends the block first in place of the rows it summarised, with its beta beside the client’s', async () => {
    const { key } = await gw.tenant({ summary_backend: 'anthropic_native', protect_first_n: 3, protect_last_n: 2 });
    const conversationId = `an-${randomUUID()}`;
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-conversation-id': conversationId, 'anthropic-beta': 'test-beta-1' },
    });
    const messages: Anthropic.MessageParam[] = [];
    for (let i = 0; i < 4; i++) {
      messages.push({ role: 'user', content: `Question ${i}?` });
      anthropic.enqueue(reply(`Answer ${i}.`));
      const answer = await client.messages.create({
        model: DROPIN_CLAUDE,
        max_tokens: 64,
        system: 'Gardener.',
        messages,
      });
      messages.push({ role: 'assistant', content: answer.content as Anthropic.ContentBlockParam[] });
    }

    anthropic.enqueue(compactionBlockReply(CONTENT, { usage: { input_tokens: 3_000, output_tokens: 200 } }));
    const compacted = await gw.call('POST', `/v1/conversations/${conversationId}/compact`, key, {});
    expect(compacted.status, compacted.text).toBe(200);
    expect(compacted.json.status).toBe('committed');
    const request = anthropic.messageRequests().at(-1)!;
    expect(request.headers['anthropic-beta']).toBe(COMPACTION_BETA);
    expect((request.body as { compaction?: unknown }).compaction).toMatchObject({ type: 'summarize' });

    messages.push({ role: 'user', content: 'Question 4?' });
    anthropic.enqueue(reply('Answer 4.'));
    const answer = await client.messages.create({
      model: DROPIN_CLAUDE,
      max_tokens: 64,
      system: 'Gardener.',
      messages,
    });
    expect(answer.content[0]).toMatchObject({ type: 'text', text: 'Answer 4.' });
    const upstream = anthropic.messageRequests().at(-1);
    expect(upstream?.headers['anthropic-beta']).toBe(`test-beta-1,${COMPACTION_BETA}`);
    const sent = upstream?.body as { messages: Array<{ role: string; content: any }> };
    expect(sent.messages[0]?.role).toBe('assistant');
    expect(sent.messages[0]?.content[0]).toMatchObject({ type: 'compaction', content: CONTENT });
    const wire = JSON.stringify(sent.messages);
    expect(wire).not.toContain('Question 0?'); // the head the block stands for
    expect(wire).toContain('Question 3?');
    expect(wire).toContain('Question 4?');
    // The reply is stored as usual, after the history.
    expect((await storedMessages(gw, key, conversationId)).at(-1)).toMatchObject({
      role: 'assistant',
      content: 'Answer 4.',
    });

    const listed = await gw.call('GET', '/v1/compactions', key);
    expect(listed.json.compactions[0]).toMatchObject({
      summaryBackend: 'anthropic_native',
      nativeFallback: null,
      summaryUsage: { inputTokens: 3_000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 },
    });
  });

  it('a client that compacts with the beta itself: passed through, recorded, continued from its block', async () => {
    const { key } = await gw.tenant();
    const conversationId = `an-${randomUUID()}`;
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-conversation-id': conversationId },
    });
    const messages: Anthropic.Beta.BetaMessageParam[] = [];
    for (let i = 0; i < 3; i++) {
      messages.push({ role: 'user', content: `Tip ${i}?` });
      anthropic.enqueue(reply(`Tip ${i}: water less.`));
      const answer = await client.messages.create({ model: DROPIN_CLAUDE, max_tokens: 64, messages } as never);
      messages.push({ role: 'assistant', content: (answer as Anthropic.Message).content as never });
    }
    const SUMMARY = '## Goal\nThree watering tips (basil notes).';
    anthropic.enqueue(compactionBlockReply(SUMMARY));
    const compaction = await client.beta.messages.create({
      model: DROPIN_CLAUDE,
      max_tokens: 512,
      messages,
      compaction: { type: 'summarize' },
      betas: [COMPACTION_BETA],
    });
    expect(compaction.stop_reason).toBe('compaction');
    const passed = anthropic.messageRequests().at(-1)!;
    expect((passed.body as { compaction?: unknown }).compaction).toEqual({ type: 'summarize' });
    expect(passed.headers['anthropic-beta']).toBe(COMPACTION_BETA);

    // The client continues from the block, as the SDK's tool runner does: it alone, first, then the next question.
    const next: Anthropic.Beta.BetaMessageParam[] = [
      { role: 'assistant', content: compaction.content as never },
      { role: 'user', content: 'Tip 3?' },
    ];
    anthropic.enqueue(reply('Tip 3: mulch.'));
    const answer = await client.beta.messages.create({
      model: DROPIN_CLAUDE,
      max_tokens: 64,
      messages: next,
      betas: [COMPACTION_BETA],
    });
    expect(answer.content[0]).toMatchObject({ type: 'text', text: 'Tip 3: mulch.' });
    // The client's own request: its signed block unchanged (the fake verifies the signature), then its question
    // (with our cache breakpoint: the client set none, issue #12).
    const upstream = anthropic.messageRequests().at(-1)!;
    const sent = (upstream.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    expect(sent[0]).toEqual(JSON.parse(JSON.stringify(next[0])));
    expect(sent.map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(JSON.stringify(sent[1])).toContain('Tip 3?');

    const listed = await gw.call('GET', '/v1/compactions', key);
    expect(listed.json.compactions.map((c: { trigger: string; status: string }) => [c.trigger, c.status])).toEqual([
      ['client', 'committed'],
    ]);
    const stored = await storedMessages(gw, key, conversationId);
    expect(
      stored.slice(-3).map((m) => [m.role, typeof m.content === 'string' ? m.content : m.content?.[0]?.text]),
    ).toEqual([
      ['assistant', SUMMARY],
      ['user', 'Tip 3?'],
      ['assistant', 'Tip 3: mulch.'],
    ]);
  });
});
