// Our cache breakpoints on a drop-in Anthropic request (workers/gateway/dropin/cacheBreakpoints.ts, issue #12): only
// where the client set none anywhere, only when SPEC §12.1 turns caching on, never on a block that cannot carry one.
import { describe, expect, it } from 'vitest';
import type { MessagesBody } from '../../../infra/llm/anthropicPassthrough.js';
import {
  clientBreakpoints,
  withOwnBreakpoints,
  withOwnChatBreakpoints,
} from '../../../workers/gateway/dropin/cacheBreakpoints.js';

const ANTHROPIC = { cachingRoute: 'anthropic' as const };
const body = (extra: Record<string, unknown> = {}): MessagesBody =>
  ({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    system: 'Be brief.',
    messages: [
      { role: 'user', content: 'one' },
      { role: 'assistant', content: [{ type: 'text', text: 'two' }] },
      { role: 'user', content: 'three' },
    ],
    ...extra,
  }) as unknown as MessagesBody;

describe('clientBreakpoints', () => {
  it('counts markers in tools, system, nested tool results and the request itself, not inside tool input', () => {
    expect(clientBreakpoints(body())).toBe(0);
    expect(clientBreakpoints(body({ cache_control: { type: 'ephemeral' } }))).toBe(1);
    expect(
      clientBreakpoints(
        body({
          tools: [{ name: 't', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }],
          messages: [
            { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 't', input: { cache_control: 1 } }] },
            {
              role: 'user',
              content: [
                {
                  type: 'tool_result',
                  tool_use_id: 'a',
                  content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }],
                },
              ],
            },
          ],
        }),
      ),
    ).toBe(2);
  });
});

describe('withOwnBreakpoints', () => {
  it('marks the system prompt and the last message, with the configured TTL, strings as text blocks', () => {
    const { body: out, added } = withOwnBreakpoints(body(), ANTHROPIC, '1h');
    expect(added).toBe(2);
    const sent = out as unknown as { system: unknown; messages: Array<{ content: unknown }> };
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(sent.messages.map((m) => m.content)).toEqual([
      [{ type: 'text', text: 'one' }],
      [{ type: 'text', text: 'two' }],
      [{ type: 'text', text: 'three', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    ]);
  });

  it('leaves the request alone when the client set a breakpoint, caching is off, or the model is not Claude', () => {
    const marked = body({ system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] });
    expect(withOwnBreakpoints(marked, ANTHROPIC, '5m')).toEqual({ body: marked, added: 0 });
    expect(withOwnBreakpoints(body(), ANTHROPIC, null).added).toBe(0);
    expect(withOwnBreakpoints(body(), { cachingRoute: null }, '5m').added).toBe(0);
    expect(withOwnBreakpoints(body({ model: 'gpt-5' }), ANTHROPIC, '5m').added).toBe(0);
  });

  it('never marks a thinking block or an empty text; an empty string stays as sent', () => {
    const thinking = body({
      system: undefined,
      messages: [
        { role: 'user', content: '' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }] },
      ],
    });
    const { body: out, added } = withOwnBreakpoints(thinking, ANTHROPIC, '5m');
    expect(added).toBe(0);
    expect(JSON.stringify(out)).not.toContain('cache_control');
    expect((out as unknown as { messages: Array<{ content: unknown }> }).messages[0]?.content).toBe('');
  });
});

describe('withOwnChatBreakpoints', () => {
  const OPENROUTER = { cachingRoute: 'openrouter' as const };
  const chat = (messages: Array<Record<string, unknown>>, model = 'anthropic/claude-sonnet-4.5') => ({
    model,
    messages,
  });
  const marker = { type: 'ephemeral' };

  it('marks the leading system message and the newest message that can carry one, as text parts', () => {
    const { body: out, added } = withOwnChatBreakpoints(
      chat([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'one' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 't', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'result' },
      ]),
      OPENROUTER,
      '5m',
    );
    expect(added).toBe(2);
    expect(out.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'Be brief.', cache_control: marker }] },
      { role: 'user', content: [{ type: 'text', text: 'one', cache_control: marker }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 't', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'result' }] }, // a tool result carries none
    ]);
    const hour = withOwnChatBreakpoints(chat([{ role: 'user', content: 'only' }]), OPENROUTER, '1h');
    expect(hour.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'only', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
    ]);
  });

  it('leaves the request as sent: a client marker anywhere, no caching route, not Claude, or caching off', () => {
    const marked = chat([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'one', cache_control: marker }] },
      { role: 'user', content: 'two' },
    ]);
    expect(withOwnChatBreakpoints(marked, OPENROUTER, '5m')).toEqual({ body: marked, added: 0 });
    const plain = chat([{ role: 'user', content: 'one' }]);
    expect(withOwnChatBreakpoints(plain, { cachingRoute: null }, '5m').body).toBe(plain);
    expect(withOwnChatBreakpoints(chat([{ role: 'user', content: 'x' }], 'gpt-5'), OPENROUTER, '5m').added).toBe(0);
    expect(withOwnChatBreakpoints(plain, OPENROUTER, null).added).toBe(0);
  });
});
