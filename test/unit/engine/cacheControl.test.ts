import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyAnthropicCacheControl, promptCachingState } from '../../../engine/cacheControl.js';
import type { ChatMessage, Role } from '../../../engine/types.js';

const M = { type: 'ephemeral' } as const;

function msg(role: Role, content: ChatMessage['content'] = `${role} text`): ChatMessage {
  return { role, content };
}

const toolCallMessage: ChatMessage = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
};
const toolRow: ChatMessage = { role: 'tool', content: 'file body', tool_call_id: 'c1' };

function isMarked(m: ChatMessage): boolean {
  if (m.cache_control) return true;
  return Array.isArray(m.content) && m.content.some((part) => part.cache_control !== undefined);
}

function markedIndexes(messages: readonly ChatMessage[]): number[] {
  return messages.flatMap((m, i) => (isMarked(m) ? [i] : []));
}

function markerCount(messages: readonly ChatMessage[]): number {
  let count = 0;
  for (const m of messages) {
    if (m.cache_control) count++;
    if (Array.isArray(m.content)) count += m.content.filter((p) => p.cache_control).length;
  }
  return count;
}

describe('applyAnthropicCacheControl — SPEC §12.2 marked-index table', () => {
  it.each([
    [
      ['system', 'user', 'assistant', 'user', 'assistant', 'user'],
      [0, 3, 4, 5],
    ],
    [
      ['user', 'assistant', 'user', 'assistant', 'user'],
      [1, 2, 3, 4],
    ],
    [
      ['system', 'user'],
      [0, 1],
    ],
  ] as [Role[], number[]][])('%j → %j', (roles, expected) => {
    const input = roles.map((role) => msg(role));
    expect(markedIndexes(applyAnthropicCacheControl(input))).toEqual(expected);
    expect(markedIndexes(applyAnthropicCacheControl(input, { nativeAnthropic: true }))).toEqual(expected);
  });

  const withTools = [msg('system'), msg('user'), toolCallMessage, toolRow, msg('assistant'), msg('user')];

  it('skips the tool row when not native → 0, 2, 4, 5', () => {
    const out = applyAnthropicCacheControl(withTools);
    expect(markedIndexes(out)).toEqual([0, 2, 4, 5]);
    expect(out[2]).toEqual({ ...toolCallMessage, cache_control: M });
    expect(out[3]).toBe(toolRow);
  });

  it('marks the tool row top-level when native → 0, 3, 4, 5', () => {
    const out = applyAnthropicCacheControl(withTools, { nativeAnthropic: true });
    expect(markedIndexes(out)).toEqual([0, 3, 4, 5]);
    expect(out[3]).toEqual({ ...toolRow, cache_control: M });
    expect(out[2]).toBe(toolCallMessage);
  });

  it('marks at most the last 4 non-system messages without a system prompt', () => {
    const input = Array.from({ length: 9 }, (_, i) => msg(i % 2 === 0 ? 'user' : 'assistant'));
    expect(markedIndexes(applyAnthropicCacheControl(input))).toEqual([5, 6, 7, 8]);
  });

  it('never marks a system message that is not at index 0', () => {
    const input = [msg('user'), msg('system'), msg('assistant'), msg('user')];
    expect(markedIndexes(applyAnthropicCacheControl(input))).toEqual([0, 2, 3]);
  });

  it('gives 4 slots to non-system messages when the system message cannot carry a marker', () => {
    const input = [msg('system', []), msg('user'), msg('assistant'), msg('user'), msg('assistant'), msg('user')];
    expect(markedIndexes(applyAnthropicCacheControl(input))).toEqual([2, 3, 4, 5]);
  });

  it('passes the slot of a message that cannot carry one to the next older candidate', () => {
    const input = [msg('system'), msg('user'), msg('assistant'), msg('user'), msg('assistant', []), msg('user')];
    expect(markedIndexes(applyAnthropicCacheControl(input))).toEqual([0, 2, 3, 5]);
  });

  it('handles an empty list', () => {
    expect(applyAnthropicCacheControl([])).toEqual([]);
  });
});

describe('applyAnthropicCacheControl — placement by content shape (§12.2 steps 4 and 7, §18.13)', () => {
  it('wraps string content in one text part carrying the marker', () => {
    const [out] = applyAnthropicCacheControl([msg('user', 'hello')]);
    expect(out).toEqual({ role: 'user', content: [{ type: 'text', text: 'hello', cache_control: M }] });
  });

  it.each([null, ''])('puts the marker top-level for content %j', (content) => {
    const [out] = applyAnthropicCacheControl([msg('assistant', content)]);
    expect(out).toEqual({ role: 'assistant', content, cache_control: M });
  });

  it('treats missing content like null', () => {
    const input = [{ role: 'assistant' } as unknown as ChatMessage];
    const [out] = applyAnthropicCacheControl(input);
    expect(out).toEqual({ role: 'assistant', cache_control: M });
    expect(out && 'content' in out).toBe(false);
  });

  it('marks the last part of array content and copies only that part', () => {
    const image = { type: 'image_url' as const, image_url: { url: 'data:x' } };
    const text = { type: 'text' as const, text: 'look' };
    const input = [msg('user', [image, text])];
    const [out] = applyAnthropicCacheControl(input);
    expect(out?.content).toEqual([image, { ...text, cache_control: M }]);
    expect((out!.content as unknown[])[0]).toBe(image);
    expect(text).toEqual({ type: 'text', text: 'look' });
  });

  it('marks an image part when it is the last part', () => {
    const input = [msg('user', [{ type: 'image_url', image_url: { url: 'u' } }])];
    expect(applyAnthropicCacheControl(input)[0]?.content).toEqual([
      { type: 'image_url', image_url: { url: 'u' }, cache_control: M },
    ]);
  });

  it('never marks an empty content array', () => {
    const input = [msg('user', [])];
    const out = applyAnthropicCacheControl(input);
    expect(out).toEqual([{ role: 'user', content: [] }]);
    expect(out[0]).toBe(input[0]);
  });

  it('places a 1h marker as {type: ephemeral, ttl: 1h}', () => {
    const out = applyAnthropicCacheControl([msg('system', 's'), msg('user', null)], { cacheTtl: '1h' });
    expect(out[0]?.content).toEqual([{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(out[1]?.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
  });

  it('treats an explicit 5m TTL like the default', () => {
    const input = [msg('system'), msg('user')];
    expect(applyAnthropicCacheControl(input, { cacheTtl: '5m' })).toEqual(applyAnthropicCacheControl(input));
  });

  it('places a fresh marker object every time', () => {
    const out = applyAnthropicCacheControl([msg('user', null), msg('assistant', null)]);
    expect(out[0]?.cache_control).not.toBe(out[1]?.cache_control);
    const again = applyAnthropicCacheControl([msg('user', null)]);
    expect(again[0]?.cache_control).not.toBe(out[0]?.cache_control);
  });

  it('carries extra runtime properties along', () => {
    const input = [{ role: 'user', content: 'x', id: 42, meta: { a: 1 } } as unknown as ChatMessage];
    expect(applyAnthropicCacheControl(input)[0]).toMatchObject({ id: 42, meta: { a: 1 } });
  });
});

describe('applyAnthropicCacheControl — stripping, idempotency, immutability', () => {
  const stale: ChatMessage[] = [
    { role: 'system', content: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
    { role: 'user', content: [{ type: 'text', text: 'old', cache_control: M }] },
    { role: 'assistant', content: null, cache_control: M },
    { role: 'user', content: 'a' },
    { role: 'assistant', content: 'b' },
    { role: 'user', content: 'c' },
    { role: 'assistant', content: 'd' },
  ];

  it('strips every existing marker first (top-level and on parts)', () => {
    const out = applyAnthropicCacheControl(stale);
    expect(markedIndexes(out)).toEqual([0, 4, 5, 6]);
    expect(out[1]).toEqual({ role: 'user', content: [{ type: 'text', text: 'old' }] });
    expect(out[2]).toEqual({ role: 'assistant', content: null });
    expect(out[0]?.content).toEqual([{ type: 'text', text: 'sys', cache_control: M }]);
  });

  it('applying twice equals applying once', () => {
    for (const native of [false, true]) {
      const once = applyAnthropicCacheControl(stale, { nativeAnthropic: native });
      expect(applyAnthropicCacheControl(once, { nativeAnthropic: native })).toEqual(once);
    }
  });

  it('does not mutate the input and keeps untouched messages by identity', () => {
    const input = structuredClone(stale);
    const before = structuredClone(input);
    const out = applyAnthropicCacheControl(input);
    expect(input).toEqual(before);
    expect(out).not.toBe(input);
    expect(out[3]).toBe(input[3]);
    expect(out[6]).not.toBe(input[6]);
    expect(out[1]).not.toBe(input[1]);
  });

  const contentArb: fc.Arbitrary<ChatMessage['content']> = fc.oneof(
    fc.string(),
    fc.constant(null),
    fc.constant(''),
    fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('text' as const), text: fc.string() }),
        fc.record({
          type: fc.constant('text' as const),
          text: fc.string(),
          cache_control: fc.constant({ type: 'ephemeral' as const }),
        }),
        fc.record({ type: fc.constant('image_url' as const), image_url: fc.record({ url: fc.string() }) }),
      ),
      { maxLength: 3 },
    ),
  );
  const messageArb: fc.Arbitrary<ChatMessage> = fc.record(
    {
      role: fc.constantFrom<Role>('system', 'user', 'assistant', 'tool'),
      content: contentArb,
      cache_control: fc.constant({ type: 'ephemeral' as const }),
    },
    { requiredKeys: ['role', 'content'] },
  );

  it('property: ≤ 4 markers, idempotent, input unchanged, only carriers marked', () => {
    fc.assert(
      fc.property(
        fc.array(messageArb, { maxLength: 12 }),
        fc.boolean(),
        fc.constantFrom('5m', '1h'),
        (input, native, ttl) => {
          const options = { nativeAnthropic: native, cacheTtl: ttl as '5m' | '1h' };
          const before = structuredClone(input);
          const once = applyAnthropicCacheControl(input, options);
          expect(input).toEqual(before);
          expect(once).toHaveLength(input.length);
          expect(markerCount(once)).toBeLessThanOrEqual(4);
          expect(markerCount(once)).toBe(markedIndexes(once).length);
          expect(applyAnthropicCacheControl(once, options)).toEqual(once);
          for (const i of markedIndexes(once)) {
            const m = once[i] as ChatMessage;
            if (m.role === 'system') expect(i).toBe(0);
            if (m.role === 'tool') expect(native).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('promptCachingState — SPEC §12.1', () => {
  it.each([
    ['claude-sonnet-4.6', 'anthropic', '5m', '💾 Prompt caching: ENABLED (Claude via Anthropic, 5m TTL)', true],
    ['anthropic/Claude-Opus', 'openrouter', '5m', '💾 Prompt caching: ENABLED (Claude via OpenRouter, 5m TTL)', false],
    ['claude-3', 'anthropic', '1h', '💾 Prompt caching: ENABLED (Claude via Anthropic, 1h TTL)', true],
    ['claude-3', 'openrouter', '1h', '💾 Prompt caching: ENABLED (Claude via OpenRouter, 1h TTL)', false],
  ] as const)('%s via %s (%s) is enabled', (model, provider, cacheTtl, line, nativeAnthropic) => {
    expect(promptCachingState({ model, provider, cacheTtl })).toEqual({
      enabled: true,
      nativeAnthropic,
      ttl: cacheTtl,
      reason: 'enabled',
      line,
    });
  });

  it.each([
    ['gpt-5.5', 'openrouter', '5m', 'not_claude'],
    ['claude-3', 'copilot', '5m', 'unsupported_provider'],
    ['claude-3', undefined, '5m', 'unsupported_provider'],
    ['claude-3', 'anthropic', null, 'disabled_by_config'],
    ['claude-3', 'anthropic', false, 'disabled_by_config'],
    ['claude-3', 'anthropic', '', 'disabled_by_config'],
  ] as const)('%s via %s (%j) is disabled: %s', (model, provider, cacheTtl, reason) => {
    expect(promptCachingState({ model, provider, cacheTtl })).toEqual({
      enabled: false,
      nativeAnthropic: false,
      ttl: null,
      reason,
      line: '💾 Prompt caching: DISABLED',
    });
  });
});
