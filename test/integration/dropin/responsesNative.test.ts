// Drop-in OpenAI Responses with native compaction (issue #13 §1, SPEC §15.1): the real `openai` SDK's `responses`
// API pointed at the gateway, the fake server as the `openai-codex` route behind it. Where the tenant opted in, the
// client's request goes upstream with `context_management` at the conversation's threshold (SPEC example: gpt-5.6
// on Codex → 196,000), from its very first request; the client keeps the compaction item and sends it back; the
// reply that carried it is stored without its reading, so no local compaction follows where the same readings
// without a checkpoint compact; a refused field is retried once without it and stays off for the session.
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { reply } from '../../support/fakes/script.js';
import { openAIDropinForFile } from './dropinFixtures.js';

const dropin = openAIDropinForFile();
type Input = OpenAI.Responses.ResponseInputItem[];

const T = 196_000; // SPEC §15.1: gpt-5.6 on Codex, threshold 204,000 → 196,000
/** Just under the 204,000 trigger: with the next question (~2,500 tokens) over it. */
const NEAR = { input_tokens: 202_500, output_tokens: 30 };
const LONG = `Now the tests. ${'Cover every branch of the parser. '.repeat(300)}`;

async function settledStatus(key: string, conversationId: string) {
  for (let i = 0; i < 100; i++) {
    const status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    if (status.status === 200 && !status.json.compacting && status.json.pendingItems === 0) return status.json;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the conversation did not settle');
}

async function compactionTriggers(tenantId: string): Promise<string[]> {
  const db = dropin.gw.testDb.db;
  const rows = await db.selectFrom('compactions').select('trigger').where('tenant_id', '=', tenantId).execute();
  return rows.map((r) => r.trigger);
}

/** Two requests: the first answered near the trigger (with a checkpoint or not), then a long question. */
async function twoRequests(key: string, checkpoint: boolean) {
  const conversationId = `or-${randomUUID()}`;
  const client = dropin.sdk(key, { 'x-conversation-id': conversationId });
  const instructions = `You write code. ${randomUUID()}`;
  const input: Input = [{ role: 'user', content: 'Write the parser.' }];
  dropin.openai.enqueue(
    reply('Parser written.', { usage: NEAR, ...(checkpoint ? { compaction: 'gAAAA-dropin' } : {}) }),
  );
  const first = await client.responses.create({ model: 'gpt-5.6', instructions, input, store: false });
  const sentFirst = dropin.openai.responsesRequests().at(-1)?.body;
  input.push(...(first.output as Input), { role: 'user', content: LONG });
  dropin.openai.enqueue(reply('Tests written.', { usage: { input_tokens: 4_000, output_tokens: 30 } }));
  await client.responses.create({ model: 'gpt-5.6', instructions, input, store: false });
  const sentSecond = dropin.openai.responsesRequests().at(-1)?.body;
  return { conversationId, first, sentFirst, sentSecond, status: await settledStatus(key, conversationId) };
}

describe('POST /v1/responses with native compaction (SPEC §15.1)', () => {
  it('adds the field from the first request; the checkpoint goes back with the client; no local compaction', async () => {
    const { id, key } = await dropin.gw.tenant({ codex_responses_native: true });
    const { first, sentFirst, sentSecond, status } = await twoRequests(key, true);
    expect(sentFirst.context_management).toEqual([{ type: 'compaction', compact_threshold: T }]);
    expect(first.output.map((item) => item.type)).toEqual(['compaction', 'message']);
    // The client's own request, passed through with the field: its compaction item included.
    expect(sentSecond.context_management).toEqual([{ type: 'compaction', compact_threshold: T }]);
    expect(sentSecond.input.filter((item: { type?: string }) => item.type === 'compaction')).toHaveLength(1);
    expect(status.nativeCompactThreshold).toBe(T);
    expect(status.lastPromptTokens).toBe(4_000);
    expect(await compactionTriggers(id)).toEqual(['responses_native']);
  });

  it('the same readings without a checkpoint compact locally; not opted in, no field', async () => {
    const { id, key } = await dropin.gw.tenant();
    const { sentFirst, status } = await twoRequests(key, false);
    expect(sentFirst).not.toHaveProperty('context_management');
    expect(status.nativeCompactThreshold).toBeNull();
    expect(await compactionTriggers(id)).toEqual(['preflight']);
  });

  it('compaction items go only to a route that issues them: another one gets the stored transcript', async () => {
    const { key } = await dropin.gw.tenant({ codex_responses_native: true });
    const client = dropin.sdk(key, { 'x-conversation-id': `or-${randomUUID()}` });
    const input: Input = [{ role: 'user', content: 'Write the lexer.' }];
    dropin.openai.enqueue(reply('Lexer written.', { compaction: 'gAAAA-codex-route' }));
    const first = await client.responses.create({ model: 'gpt-5.6', input, store: false });
    // The client appends the output as usual (the compaction item included) and switches model: `gpt-test` is
    // served by `openai` at a custom base URL (not a route that issues checkpoints).
    const kept: Input = [...input, ...(first.output as Input), { role: 'user', content: 'Now the parser.' }];
    dropin.openai.enqueue(reply('Parser written.'));
    await client.responses.create({ model: 'gpt-test', input: kept, store: false });
    const sent = dropin.openai.responsesRequests().at(-1)?.body;
    expect(JSON.stringify(sent.input)).not.toContain('gAAAA-codex-route');
    expect(sent).not.toHaveProperty('context_management');
    const texts = sent.input.map((item: { content: Array<{ text: string }> }) => item.content[0]?.text);
    expect(texts).toEqual(['Write the lexer.', 'Lexer written.', 'Now the parser.']);
  });

  it('a field the client set is its own; a refusal is retried once without ours and stays off', async () => {
    const { key } = await dropin.gw.tenant({ codex_responses_native: true });
    const client = dropin.sdk(key, { 'x-conversation-id': `or-${randomUUID()}` });
    const own = [{ type: 'compaction' as const, compact_threshold: 50_000 }];
    dropin.openai.enqueue(reply('Mine.'));
    await client.responses.create({
      model: 'gpt-5.6',
      input: [{ role: 'user', content: 'Hi' }],
      context_management: own,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(dropin.openai.responsesRequests().at(-1)?.body.context_management).toEqual(own);

    const refused = dropin.sdk(key, { 'x-conversation-id': `or-${randomUUID()}` });
    const before = dropin.openai.responsesRequests().length;
    dropin.openai.enqueue(
      { kind: 'error', status: 400, code: 'unsupported_parameter', message: 'context_management is not supported.' },
      reply('Anyway.'),
    );
    const input: Input = [{ role: 'user', content: 'Hello?' }];
    const answer = await refused.responses.create({ model: 'gpt-5.6', input, stream: true });
    let text = '';
    for await (const event of answer) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).toBe('Anyway.');
    const sent = dropin.openai.responsesRequests().slice(before);
    expect(sent.map((r) => 'context_management' in r.body)).toEqual([true, false]);
    input.push({ role: 'assistant', content: 'Anyway.' }, { role: 'user', content: 'Again?' });
    dropin.openai.enqueue(reply('Again.'));
    await refused.responses.create({ model: 'gpt-5.6', input });
    expect(dropin.openai.responsesRequests().at(-1)?.body).not.toHaveProperty('context_management');
  });
});
