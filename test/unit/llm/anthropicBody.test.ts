// The Messages body put together from each entry's JSON (anthropicBody.ts): always the bytes of JSON.stringify of
// the body toAnthropicRequest gives, whether an entry is serialised now or was kept from an earlier body.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyAnthropicCacheControl } from '../../../engine/cacheControl.js';
import type { ChatMessage } from '../../../engine/types.js';
import { anthropicMessagesBody } from '../../../infra/llm/anthropicBody.js';
import { toAnthropicRequest } from '../../../infra/llm/anthropicMessages.js';
import { message, rest, text } from './messageArbitraries.js';

function stringified(head: Record<string, unknown>, messages: readonly ChatMessage[], tail: Record<string, unknown>) {
  return Buffer.from(JSON.stringify({ ...head, messages: toAnthropicRequest(messages).messages, ...tail }));
}

const head = fc.record({ model: text, max_tokens: fc.nat() });
/** The fields after `messages` (the head's are not repeated). */
const tools = rest.map(({ max_tokens: _head, ...fields }) => fields);
/** Tool rows in runs (one user message each), system messages between them (hoisted: they do not end a run). */
const transcript = fc.array(
  fc.oneof(
    message,
    message.map((m) => ({ ...m, role: 'tool' as const })),
  ),
  { maxLength: 10 },
);

describe('anthropicMessagesBody', () => {
  it('is JSON.stringify of the body, byte for byte, for any messages and fields', () => {
    fc.assert(
      fc.property(head, transcript, tools, fc.option(text, { nil: undefined }), (first, messages, fields, system) => {
        const tail = { ...(system !== undefined ? { system } : {}), ...fields };
        expect(anthropicMessagesBody(first, messages, tail).equals(stringified(first, messages, tail))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('stays exact as a transcript grows turn by turn and its last messages are marked afresh', () => {
    fc.assert(
      fc.property(transcript, fc.nat(), fc.boolean(), (messages, seed, nativeAnthropic) => {
        for (let turn = 1 + (seed % Math.max(1, messages.length)); turn <= messages.length; turn++) {
          const prefix = messages.slice(0, turn);
          // SPEC §12.2: the markers are copies, on other messages each turn (tool rows too, natively).
          for (const sent of [prefix, applyAnthropicCacheControl(prefix, { cacheTtl: '1h', nativeAnthropic })]) {
            const h = { model: 'claude-sonnet-4-5', max_tokens: 8 };
            expect(
              anthropicMessagesBody(h, sent, { stream: true }).equals(stringified(h, sent, { stream: true })),
            ).toBe(true);
          }
        }
      }),
      { numRuns: 100 },
    );
  });

  it('a run of tool rows is one user message of their results, each kept by row', () => {
    const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'ls', arguments: '{}' } });
    const rows: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
      { role: 'tool', content: 'A', tool_call_id: 'a' },
      { role: 'tool', content: 'B', tool_call_id: 'b' },
    ];
    const first = JSON.parse(anthropicMessagesBody({}, rows, {}).toString());
    expect(first.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'a', content: 'A' },
        { type: 'tool_result', tool_use_id: 'b', content: 'B' },
      ],
    });
    // The next turn: a copy of the second row with other content is serialised as it is now.
    const next = [...rows.slice(0, 3), { ...rows[3]!, content: 'B2' }, { role: 'user' as const, content: 'more' }];
    const second = JSON.parse(anthropicMessagesBody({}, next, {}).toString());
    expect(second.messages.slice(-2)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'A' },
          { type: 'tool_result', tool_use_id: 'b', content: 'B2' },
        ],
      },
      { role: 'user', content: 'more' },
    ]);
  });
});
