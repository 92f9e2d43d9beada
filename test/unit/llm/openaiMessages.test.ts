// The Chat Completions body put together from each message's JSON (openaiMessages.ts): always the bytes of
// JSON.stringify of the body, whether a message is serialised now or was kept from an earlier body.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyAnthropicCacheControl } from '../../../engine/cacheControl.js';
import type { ChatMessage } from '../../../engine/types.js';
import { chatCompletionsBody, toOpenAIMessage } from '../../../infra/llm/openaiMessages.js';
import { message, rest, text } from './messageArbitraries.js';

const stringified = (model: string, messages: readonly ChatMessage[], fields: Record<string, unknown>) =>
  Buffer.from(JSON.stringify({ model, messages: messages.map(toOpenAIMessage), ...fields }));

describe('chatCompletionsBody', () => {
  it('is JSON.stringify of the body, byte for byte, for any messages and fields', () => {
    fc.assert(
      fc.property(text, fc.array(message, { maxLength: 8 }), rest, (model, messages, fields) => {
        expect(chatCompletionsBody(model, messages, fields).equals(stringified(model, messages, fields))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('stays exact as a transcript grows turn by turn and its last messages are marked afresh', () => {
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 12 }), fc.nat(), (transcript, seed) => {
        // The same message objects, as a kept transcript hands them to each turn; the markers of SPEC §12.2 are
        // copies placed on other messages each time, and the copies of earlier turns lose theirs.
        for (let turn = 1 + (seed % transcript.length); turn <= transcript.length; turn++) {
          const prefix = transcript.slice(0, turn);
          for (const messages of [prefix, applyAnthropicCacheControl(prefix, { cacheTtl: '5m' })]) {
            expect(chatCompletionsBody('m', messages, {}).equals(stringified('m', messages, {}))).toBe(true);
          }
        }
      }),
      { numRuns: 100 },
    );
  });

  it('serialises a message once while it lives: the bytes of a later body are those it kept', () => {
    const kept: ChatMessage = { role: 'user', content: 'first' };
    const before = chatCompletionsBody('m', [kept], {});
    const again = chatCompletionsBody('m', [kept, { role: 'assistant', content: 'second' }], {});
    expect(JSON.parse(again.toString())).toEqual({
      model: 'm',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'second' },
      ],
    });
    expect(before.toString()).toBe('{"model":"m","messages":[{"role":"user","content":"first"}]}');
    // A copy with other content is another object: its own JSON, never the kept one.
    const copy = { ...kept, content: 'changed' };
    expect(JSON.parse(chatCompletionsBody('m', [copy], {}).toString()).messages[0].content).toBe('changed');
  });
});
