// The prepared context (engine/prepareContext.ts): one function for the /context route and the agent turn.
import { describe, expect, it } from 'vitest';
import { prepareContext, withCacheMarkers } from '../../../engine/prepareContext.js';
import type { ChatMessage } from '../../../engine/types.js';

const transcript: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'list files' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
  // An orphan result (its call was compacted away): sanitising drops it (SPEC §8.7).
  { role: 'tool', tool_call_id: 'gone', content: 'stale' },
  { role: 'assistant', content: 'a.txt' },
  { role: 'user', content: 'thanks' },
];

function markerCount(messages: readonly ChatMessage[]): number {
  let count = 0;
  for (const m of messages) {
    if (m.cache_control) count++;
    if (Array.isArray(m.content)) count += m.content.filter((p) => p.cache_control).length;
  }
  return count;
}

describe('prepareContext', () => {
  it('sanitises tool pairs and places system + last-3 markers for Claude on a caching route', () => {
    const prepared = prepareContext(transcript, {
      model: 'claude-sonnet-5',
      cachingRoute: 'anthropic',
      cacheTtl: '1h',
    });
    expect(prepared.messages.some((m) => m.tool_call_id === 'gone')).toBe(false);
    expect(prepared.caching).toMatchObject({ enabled: true, nativeAnthropic: true, ttl: '1h', reason: 'enabled' });
    expect(markerCount(prepared.messages)).toBe(4);
    expect(prepared.messages[0]!.content).toEqual([
      { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
  });

  it('caches Claude through OpenRouter only on that route, and never for other models or without a TTL', () => {
    const target = { model: 'anthropic/claude-sonnet-5', cacheTtl: '5m' as const };
    expect(prepareContext(transcript, { ...target, cachingRoute: 'openrouter' }).caching.enabled).toBe(true);
    const none = prepareContext(transcript, { ...target, cachingRoute: null });
    expect(none.caching.reason).toBe('unsupported_provider');
    expect(markerCount(none.messages)).toBe(0);
    expect(
      prepareContext(transcript, { model: 'gpt-5', cachingRoute: 'openrouter', cacheTtl: '5m' }).caching.reason,
    ).toBe('not_claude');
    expect(prepareContext(transcript, { ...target, cachingRoute: 'anthropic', cacheTtl: null }).caching.reason).toBe(
      'disabled_by_config',
    );
  });

  it('removes markers a message already carries when caching is off; never mutates its input', () => {
    const marked: ChatMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: 'yo', cache_control: { type: 'ephemeral' } },
    ];
    const copy = structuredClone(marked);
    const prepared = withCacheMarkers(marked, { model: 'gpt-5', cachingRoute: null, cacheTtl: '5m' });
    expect(markerCount(prepared.messages)).toBe(0);
    expect(marked).toEqual(copy);
  });
});
