// Drop-in OpenAI Responses (issue #12) with the real `openai` SDK's `responses` API pointed at the gateway, the fake
// OpenAI server behind it: `store: false`, the whole input each time, no previous_response_id. The input items are
// stored once (the assistant's output items, echoed back, match the stored reply); while nothing was compacted the
// provider gets the client's own request byte for byte; streamed responses reach the client with the Responses
// event types, function calls included, and are stored; after a compaction the provider gets the compacted
// transcript as instructions and input; refusals and provider errors in OpenAI's dialect.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { TemporalUnavailableError } from '../../../clients/conversationClient.js';
import type { Conversations } from '../../../workers/gateway/conversations.js';
import { rateLimited, reply, toolCallsReply } from '../../support/fakes/script.js';
import { openAIDropinForFile, storedMessages } from './dropinFixtures.js';

const dropin = openAIDropinForFile();

type Input = OpenAI.Responses.ResponseInputItem[];

describe('POST /v1/responses', () => {
  it('stores each item once; never compacted, the provider gets the client’s request byte for byte', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const instructions = `You are terse. ${randomUUID()}`;
    const input: Input = [{ role: 'user', content: 'What is the capital of France?' }];
    dropin.openai.enqueue(reply('Paris.'));
    const first = await client.responses.create({ model: 'gpt-test', instructions, input, store: false });
    expect(first.output_text).toBe('Paris.');
    expect(dropin.openai.responsesRequests().at(-1)?.raw).toBe(
      JSON.stringify({ model: 'gpt-test', instructions, input, store: false }),
    );

    input.push(...(first.output as Input), { role: 'user', content: 'And of Italy?' });
    dropin.openai.enqueue(reply('Rome.'));
    const { data: second, response } = await client.responses
      .create({ model: 'gpt-test', instructions, input, store: false })
      .withResponse();
    expect(second.output_text).toBe('Rome.');
    const raw1 = dropin.openai.responsesRequests().at(-2)?.raw ?? '';
    const raw2 = dropin.openai.responsesRequests().at(-1)?.raw ?? '';
    expect(raw2).toBe(JSON.stringify({ model: 'gpt-test', instructions, input, store: false }));
    const prefix = raw1.slice(0, raw1.lastIndexOf(']'));
    expect(raw2.startsWith(prefix)).toBe(true);

    const conversationId = response.headers.get('x-conversation-id') as string;
    expect(conversationId).toMatch(/^or-/);
    expect((await storedMessages(dropin.gw, key, conversationId)).map((m) => [m.role, m.content])).toEqual([
      ['system', instructions],
      ['user', 'What is the capital of France?'],
      ['assistant', 'Paris.'],
      ['user', 'And of Italy?'],
      ['assistant', 'Rome.'],
    ]);
  });

  it('streams with the Responses event types, function calls included; output and results are stored', async () => {
    const { key } = await dropin.gw.tenant();
    const conversationId = `or-${randomUUID()}`;
    const client = dropin.sdk(key, { 'x-conversation-id': conversationId });
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'read_file', parameters: { type: 'object' }, strict: false },
    ];
    const input: Input = [{ role: 'user', content: 'Read notes.txt please.' }];
    dropin.openai.enqueue(toolCallsReply([{ id: 'call_r1', name: 'read_file', input: { path: 'notes.txt' } }]));
    const stream = await client.responses.create({ model: 'gpt-test', input, tools, store: false, stream: true });
    const types: string[] = [];
    let completed: OpenAI.Responses.Response | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.function_call_arguments.delta');
    expect(types.at(-1)).toBe('response.completed');
    const call = completed?.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ call_id: 'call_r1', name: 'read_file', arguments: '{"path":"notes.txt"}' });

    input.push(...((completed?.output ?? []) as Input), {
      type: 'function_call_output',
      call_id: 'call_r1',
      output: 'Water the ficus on Tuesdays.',
    });
    dropin.openai.enqueue(reply('It says: water the ficus on Tuesdays.'));
    const answer = client.responses.stream({ model: 'gpt-test', input, tools, store: false });
    let text = '';
    answer.on('response.output_text.delta', (event) => {
      text += event.delta;
    });
    const final = await answer.finalResponse();
    expect(text).toBe('It says: water the ficus on Tuesdays.');
    expect(final.output_text).toBe(text);

    const rows = await storedMessages(dropin.gw, key, conversationId);
    expect(rows.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows[1]?.tool_calls?.[0]).toMatchObject({ id: 'call_r1', function: { name: 'read_file' } });
    expect(rows[2]).toMatchObject({ tool_call_id: 'call_r1', content: 'Water the ficus on Tuesdays.' });
    expect(rows[3]?.content).toBe(text);
  });

  it('after a compaction, the provider gets the compacted transcript as instructions and input', async () => {
    const { key } = await dropin.gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    const conversationId = `or-${randomUUID()}`;
    const client = dropin.sdk(key, { 'x-conversation-id': conversationId });
    const input: Input = [];
    for (let i = 0; i < 4; i++) {
      const details = 'The leaves turn yellow at the edges and the soil stays dry for days. '.repeat(40);
      input.push({ role: 'user', content: `Question ${i} about plant ${i}? ${details}` });
      const tokens = i === 3 ? 200_000 : 1_000 + i;
      dropin.openai.enqueue(reply(`Answer ${i}.`, { usage: { input_tokens: tokens, output_tokens: 5 } }));
      const answer = await client.responses.create({ model: 'gpt-test', instructions: 'Garden helper.', input });
      input.push({ type: 'reasoning', id: `rs_${i}`, summary: [] } as OpenAI.Responses.ResponseReasoningItem);
      input.push(...(answer.output as Input));
    }
    for (let i = 0; i < 100; i++) {
      const status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
      if (status.json.compressionCount === 1 && !status.json.compacting) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    input.push({ role: 'user', content: 'What about plant 9?' });
    dropin.openai.enqueue(reply('Plant 9 likes shade.'));
    const { data, response } = await client.responses
      .create({ model: 'gpt-test', instructions: 'Garden helper.', input })
      .withResponse();
    expect(data.output_text).toBe('Plant 9 likes shade.');
    const sent = dropin.openai.responsesRequests().at(-1)?.body;
    expect(sent.instructions).toContain('Garden helper.');
    expect(JSON.stringify(sent.input)).toContain('Fix the failing tests of the project.');
    expect(JSON.stringify(sent.input)).not.toContain('Question 0 about plant 0?');
    expect(JSON.stringify(sent.input)).not.toContain('"reasoning"');
    expect(sent.input.at(-1)).toMatchObject({
      role: 'user',
      content: [{ type: 'input_text', text: 'What about plant 9?' }],
    });
    expect(Number(response.headers.get('x-reasoning-items-dropped'))).toBe(4);
  });

  it('refuses previous_response_id and an empty input in OpenAI’s dialect; passes a provider error on', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const chained = await client.responses
      .create({ model: 'gpt-test', input: 'hi', previous_response_id: 'resp_1' })
      .catch((e) => e);
    expect(chained).toBeInstanceOf(OpenAI.BadRequestError);
    expect(chained.param).toBe('previous_response_id');
    const empty = await client.responses.create({ model: 'gpt-test', input: [] }).catch((e) => e);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    dropin.openai.enqueue(rateLimited({ 'retry-after': '5' }));
    const limited = await client.responses.create({ model: 'gpt-test', input: 'hello' }).catch((e) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.headers.get('retry-after')).toBe('5');
  });

  it('a repeated client compaction request refreshes the summary the shorter history is recognised by', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const input: Input = [
      { role: 'user', content: `Plan the trip. ${randomUUID()}` },
      { role: 'assistant', content: 'Train to Lyon, then Turin.' },
    ];
    const compact: Input = [
      ...input,
      { role: 'user', content: 'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.' },
    ];
    dropin.openai.enqueue(reply('SUMMARY one: Lyon, Turin.'), reply('SUMMARY two: Lyon then Turin by train.'));
    const first = await client.responses.create({ model: 'gpt-test', input: compact, store: false });
    const again = await client.responses.create({ model: 'gpt-test', input: compact, store: false });
    expect(again.output_text).toBe('SUMMARY two: Lyon then Turin by train.');
    // Both went upstream as sent, the repeat too.
    const sent = dropin.openai.responsesRequests().slice(-2);
    for (const request of sent)
      expect(request.raw).toBe(JSON.stringify({ model: 'gpt-test', input: compact, store: false }));

    const shorter: Input = [
      input[0] as OpenAI.Responses.ResponseInputItem,
      { role: 'user', content: `Summary so far:\n${again.output_text}` },
      { role: 'user', content: 'Book the Turin leg.' },
    ];
    dropin.openai.enqueue(reply('Booked.'));
    const { response } = await client.responses
      .create({ model: 'gpt-test', input: shorter, store: false })
      .withResponse();
    const conversationId = response.headers.get('x-conversation-id') as string;
    expect(dropin.openai.responsesRequests().at(-1)?.raw).toBe(
      JSON.stringify({ model: 'gpt-test', input: shorter, store: false }),
    );
    const db = dropin.gw.testDb.db;
    const conversations = await db.selectFrom('conversations').select('id').where('tenant_id', '=', tenantId).execute();
    expect(conversations.map((c) => c.id)).toEqual([conversationId]);
    const compactions = await db
      .selectFrom('compactions')
      .select(['trigger', 'status', 'summary'])
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(compactions).toEqual([{ trigger: 'client', status: 'committed', summary: again.output_text }]);
    // The old session keeps the first summary it stored; the new one holds the shorter history as sent.
    const stored = await storedMessages(dropin.gw, key, conversationId);
    expect(stored.map((m) => m.content)).toEqual([
      (shorter[0] as { content: string }).content,
      `Summary so far:\n${again.output_text}`,
      'Book the Turin leg.',
      'Booked.',
    ]);
    expect(first.output_text).toBe('SUMMARY one: Lyon, Turin.');
  });

  it('a rotation Temporal did not hear of (503) is told again by the next request, once', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const input: Input = [
      { role: 'user', content: `Plan the move. ${randomUUID()}` },
      { role: 'assistant', content: 'Boxes first, then the van.' },
    ];
    const compact: Input = [
      ...input,
      { role: 'user', content: 'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.' },
    ];
    dropin.openai.enqueue(reply('SUMMARY: boxes, then the van.'));
    await client.responses.create({ model: 'gpt-test', input: compact, store: false });
    const shorter: Input = [
      input[0] as OpenAI.Responses.ResponseInputItem,
      { role: 'user', content: 'Summary so far:\nSUMMARY: boxes, then the van.' },
      { role: 'user', content: 'Book the van.' },
    ];

    // Temporal is down the moment the rotation is committed.
    const conversations = dropin.gw.stack.client;
    const original = conversations.clientCompacted;
    let told = 0;
    let failNext = true;
    conversations.clientCompacted = async function (this: Conversations, ...args: Parameters<typeof original>) {
      told += 1;
      if (failNext) {
        failNext = false;
        throw new TemporalUnavailableError('Temporal is unreachable', 2);
      }
      return original.apply(this, args);
    };
    try {
      const refused = await client.responses
        .create({ model: 'gpt-test', input: shorter, store: false })
        .catch((e) => e);
      expect(refused).toBeInstanceOf(OpenAI.APIError);
      expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
      expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('2');

      dropin.openai.enqueue(reply('Van booked.'), reply('Boxes ordered.'));
      const { data, response } = await client.responses
        .create({ model: 'gpt-test', input: shorter, store: false })
        .withResponse();
      expect(data.output_text).toBe('Van booked.');
      expect(told).toBe(2); // told again, before the request's messages were stored
      const conversationId = response.headers.get('x-conversation-id') as string;
      const deadline = Date.now() + 10_000;
      let status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
      while (status.json.autoPaused !== 'client' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
      }
      expect(status.json.autoPaused).toBe('client');

      // Heard: the next request does not tell again.
      const next: Input = [
        ...shorter,
        { role: 'assistant', content: 'Van booked.' },
        { role: 'user', content: 'And the boxes?' },
      ];
      const more = await client.responses.create({ model: 'gpt-test', input: next, store: false });
      expect(more.output_text).toBe('Boxes ordered.');
      expect(told).toBe(2);
      await conversations.pendingWrites.drain();
      expect((await conversations.settled(tenantId, conversationId)).lastPromptTokens).toBe(1_200);
      // Told once more all the same (the window between a signal and the workflow's publication): adopted once.
      const row = await conversations.require(tenantId, conversationId);
      const [rotation] = await dropin.gw.testDb.db
        .selectFrom('compactions')
        .select('id')
        .where('tenant_id', '=', tenantId)
        .where('trigger', '=', 'client')
        .execute();
      const before = await conversations.temporal.liveStatus(tenantId, conversationId);
      await original.call(conversations, tenantId, row, {
        compactionId: rotation?.id as string,
        sessionId: row.current_session_id,
        version: row.version,
        activeMessages: 0,
        activeTokens: 0,
      });
      for (let i = 0; i < 5; i++) {
        const live = await conversations.temporal.liveStatus(tenantId, conversationId);
        expect([live.activeMessages, live.lastPromptTokens]).toEqual([before.activeMessages, before.lastPromptTokens]);
        await new Promise((resolve) => setTimeout(resolve, 60));
      }
      const stored = await storedMessages(dropin.gw, key, conversationId);
      expect(stored.map((m) => m.content).slice(-3)).toEqual(['Van booked.', 'And the boxes?', 'Boxes ordered.']);
    } finally {
      conversations.clientCompacted = original;
    }
  });
});
