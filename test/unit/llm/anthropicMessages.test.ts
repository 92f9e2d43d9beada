import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyAnthropicCacheControl } from '../../../engine/cacheControl.js';
import type { ChatMessage, ContentPart, ToolCall } from '../../../engine/types.js';
import {
  argumentsToInput,
  RAW_ARGUMENTS_KEY,
  SYSTEM_TURN_FIELDS,
  TOOL_ERROR,
  toAnthropicRequest,
  toAnthropicTools,
} from '../../../infra/llm/anthropicMessages.js';
import { fromAnthropicRequest, fromAnthropicResponse, inputToArguments } from '../../../infra/llm/fromAnthropic.js';

const PNG = 'data:image/png;base64,iVBORw0KGgo=';

function call(id: string, name: string, args: Record<string, unknown> = {}): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/** A conversation with every shape: system, text, parts, images, parallel tool calls, tool rows with names. */
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the failing test in src/app.ts' },
  {
    role: 'assistant',
    content: 'Reading both files.',
    tool_calls: [
      call('c1', 'read_file', { path: 'src/app.ts' }),
      call('c2', 'read_file', { path: 'test/app.test.ts' }),
    ],
  },
  { role: 'tool', content: 'export const x = 1;', tool_call_id: 'c1', name: 'read_file' },
  { role: 'tool', content: 'expect(x).toBe(2)', tool_call_id: 'c2', name: 'read_file' },
  { role: 'assistant', content: null, tool_calls: [call('c3', 'write_file', { path: 'src/app.ts', text: 'x = 2' })] },
  { role: 'tool', content: [{ type: 'text', text: 'written' }], tool_call_id: 'c3', name: 'write_file' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Does this screenshot look right?' },
      { type: 'image_url', image_url: { url: PNG } },
      { type: 'image_url', image_url: { url: 'https://example.com/shot.png' } },
    ],
  },
  { role: 'assistant', content: 'Yes, the test passes now.' },
];

describe('toAnthropicRequest', () => {
  it('moves the system prompt to `system` and keeps the other roles in order', () => {
    const { system, messages } = toAnthropicRequest(conversation);
    expect(system).toBe('You are a coding agent.');
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'user',
      'assistant',
    ]);
  });

  it('turns tool calls into tool_use blocks with parsed input', () => {
    const { messages } = toAnthropicRequest(conversation);
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading both files.' },
        { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'src/app.ts' } },
        { type: 'tool_use', id: 'c2', name: 'read_file', input: { path: 'test/app.test.ts' } },
      ],
    });
    expect(messages[3]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'c3', name: 'write_file', input: { path: 'src/app.ts', text: 'x = 2' } }],
    });
  });

  it('merges consecutive tool rows into one user message of tool_result blocks', () => {
    const { messages } = toAnthropicRequest(conversation);
    expect(messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'c1', content: 'export const x = 1;' },
        { type: 'tool_result', tool_use_id: 'c2', content: 'expect(x).toBe(2)' },
      ],
    });
    expect(messages[4]).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'c3', content: [{ type: 'text', text: 'written' }] }],
    });
  });

  it('turns data: URLs into base64 sources and other URLs into url sources', () => {
    const { messages } = toAnthropicRequest(conversation);
    expect(messages[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Does this screenshot look right?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/shot.png' } },
      ],
    });
  });

  it('carries every SPEC §12.2 marker to the block that stands for it (native mode)', () => {
    const marked = applyAnthropicCacheControl(conversation, { cacheTtl: '1h', nativeAnthropic: true });
    const { system, messages } = toAnthropicRequest(marked);
    const ttl = { type: 'ephemeral', ttl: '1h' };
    expect(system).toEqual([{ type: 'text', text: 'You are a coding agent.', cache_control: ttl }]);
    // The last 3 non-system messages: the tool row c3, the user with images (last part) and the final assistant.
    expect(messages[4]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'c3', content: [{ type: 'text', text: 'written' }], cache_control: ttl },
    ]);
    const images = messages[5]?.content as { cache_control?: unknown }[];
    expect(images.map((b) => b.cache_control)).toEqual([undefined, undefined, ttl]);
    expect(messages[6]?.content).toEqual([{ type: 'text', text: 'Yes, the test passes now.', cache_control: ttl }]);
    expect(JSON.stringify({ system, messages }).split('cache_control').length - 1).toBe(4);
  });

  it('puts the top-level marker of a content-null tool-call message on its last tool_use block', () => {
    const message: ChatMessage = {
      role: 'assistant',
      content: null,
      tool_calls: [call('a', 'x'), call('b', 'y')],
      cache_control: { type: 'ephemeral' },
    };
    const { messages } = toAnthropicRequest([message]);
    expect(messages[0]?.content).toEqual([
      { type: 'tool_use', id: 'a', name: 'x', input: {} },
      { type: 'tool_use', id: 'b', name: 'y', input: {}, cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('never mutates its input', () => {
    const marked = applyAnthropicCacheControl(conversation, { nativeAnthropic: true });
    const before = structuredClone(marked);
    toAnthropicRequest(marked);
    expect(marked).toEqual(before);
  });

  it('drops extra runtime properties (only wire fields are sent)', () => {
    const message = { role: 'user', content: 'hi', id: 42, created_at: 'x' } as ChatMessage;
    expect(toAnthropicRequest([message]).messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('converts OpenAI function tools to Anthropic tools', () => {
    expect(
      toAnthropicTools([
        {
          type: 'function',
          function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: {} } },
        },
        { type: 'function', function: { name: 'now' } },
      ]),
    ).toEqual([
      { name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: {} } },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
  });
});

describe('tool-call arguments', () => {
  it('parses JSON objects and round-trips compact JSON exactly', () => {
    const args = JSON.stringify({ path: 'a.ts', n: 1, nested: { ok: true } });
    expect(argumentsToInput(args)).toEqual({ path: 'a.ts', n: 1, nested: { ok: true } });
    expect(inputToArguments(argumentsToInput(args))).toBe(args);
  });

  it('maps blank arguments to {} and carries text that is not a JSON object verbatim', () => {
    expect(argumentsToInput('')).toEqual({});
    expect(inputToArguments(argumentsToInput(''))).toBe('{}');
    for (const raw of ['{"path": "a.ts"', '[1,2]', '"text"', 'not json']) {
      expect(argumentsToInput(raw)).toEqual({ [RAW_ARGUMENTS_KEY]: raw });
      expect(inputToArguments(argumentsToInput(raw))).toBe(raw);
    }
  });
});

describe('round trip: toAnthropicRequest → fromAnthropicRequest', () => {
  it('gives back the same list for the full conversation, unmarked and marked (native and not)', () => {
    expect(fromAnthropicRequest(toAnthropicRequest(conversation))).toEqual(conversation);
    for (const nativeAnthropic of [true, false]) {
      for (const cacheTtl of ['5m', '1h'] as const) {
        const marked = applyAnthropicCacheControl(conversation, { cacheTtl, nativeAnthropic });
        expect(fromAnthropicRequest(toAnthropicRequest(marked))).toEqual(marked);
      }
    }
  });

  it('splits merged tool results back into one tool row each, in order', () => {
    const back = fromAnthropicRequest(toAnthropicRequest(conversation));
    expect(back.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['c1', 'c2', 'c3']);
  });

  it('restores a tool row name from its call (tool_result has no name field)', () => {
    const rows: ChatMessage[] = [
      { role: 'assistant', content: null, tool_calls: [call('c1', 'grep')] },
      { role: 'tool', content: 'match', tool_call_id: 'c1' },
    ];
    expect(fromAnthropicRequest(toAnthropicRequest(rows))[1]).toEqual({ ...rows[1], name: 'grep' });
  });

  it('normalises what the Anthropic format cannot express (documented rules 2, 4 and 6)', () => {
    const input: ChatMessage[] = [
      { role: 'system', content: 'one' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'two' },
      { role: 'assistant', content: '', tool_calls: [call('c1', 'ls')] },
      { role: 'tool', content: 'a b', tool_call_id: 'c1', name: 'ls' },
      { role: 'assistant', content: [{ type: 'text', text: 'single part' }], tool_calls: [call('c2', 'ls')] },
      { role: 'tool', content: null, tool_call_id: 'c2', name: 'ls' },
      { role: 'user', content: null },
    ];
    expect(fromAnthropicRequest(toAnthropicRequest(input))).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call('c1', 'ls')] },
      { role: 'tool', content: 'a b', tool_call_id: 'c1', name: 'ls' },
      { role: 'assistant', content: 'single part', tool_calls: [call('c2', 'ls')] },
      { role: 'tool', content: null, tool_call_id: 'c2', name: 'ls' },
      { role: 'user', content: '' },
    ]);
  });

  it('keeps system turns where they stand with systemInPlace, their own fields included (rule 2)', () => {
    const input: ChatMessage[] = [
      { role: 'system', content: 'prompt' },
      { role: 'user', content: 'hi' },
      {
        role: 'system',
        content: 'per-turn',
        [SYSTEM_TURN_FIELDS]: { output_config: { effort: 'low' } },
      } as ChatMessage,
      { role: 'assistant', content: null, tool_calls: [call('c1', 'ls')] },
      { role: 'tool', content: 'a', tool_call_id: 'c1', name: 'ls' },
      { role: 'system', content: [{ type: 'text', text: 'between results' }] },
      { role: 'tool', content: 'b', tool_call_id: 'c1', name: 'ls' },
    ];
    const request = toAnthropicRequest(input, { systemInPlace: true });
    expect(request.system).toBe('prompt');
    expect(request.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'per-turn', output_config: { effort: 'low' } },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'ls', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'a' }] },
      { role: 'system', content: [{ type: 'text', text: 'between results' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'b' }] },
    ]);
    expect(fromAnthropicRequest(request)).toEqual(input);
    // Without the option every system message goes to `system`, as before.
    expect(toAnthropicRequest(input).messages.map((m) => m.role)).not.toContain('system');
  });

  it('keeps a tool result’s error mark both ways (rule 7)', () => {
    const request = {
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'Bash', input: { command: 'false' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'c1', content: 'exit code 1', is_error: true },
            { type: 'tool_result', tool_use_id: 'c1', content: 'fine', is_error: false },
          ],
        },
      ],
    } as never;
    const rows = fromAnthropicRequest(request);
    expect(rows[1]).toEqual({
      role: 'tool',
      content: 'exit code 1',
      tool_call_id: 'c1',
      name: 'Bash',
      [TOOL_ERROR]: true,
    });
    expect(rows[2]).toEqual({ role: 'tool', content: 'fine', tool_call_id: 'c1', name: 'Bash' });
    const back = toAnthropicRequest(rows).messages[1]?.content as unknown as Array<Record<string, unknown>>;
    expect(back.map((block) => block.is_error)).toEqual([true, undefined]);
  });

  it('reads a system turn inside `messages` as a system message where it stands, its other fields beside it', () => {
    const back = fromAnthropicRequest({
      system: 'prompt',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'text', text: 'reminder' }], output_config: { effort: 'medium' } },
        { role: 'system', content: 'plain' },
      ] as never,
    });
    expect(back).toEqual([
      { role: 'system', content: 'prompt' },
      { role: 'user', content: 'hi' },
      {
        role: 'system',
        content: [{ type: 'text', text: 'reminder' }],
        [SYSTEM_TURN_FIELDS]: { output_config: { effort: 'medium' } },
      },
      { role: 'system', content: 'plain' },
    ]);
  });

  it('property: any well-formed conversation comes back equal after the documented normalisation', () => {
    const text = fc.string({ minLength: 1, maxLength: 12 });
    const part: fc.Arbitrary<ContentPart> = fc.oneof(
      text.map((t) => ({ type: 'text' as const, text: t })),
      fc
        .constantFrom(PNG, 'https://example.com/a.png')
        .map((url) => ({ type: 'image_url' as const, image_url: { url } })),
    );
    const content = fc.oneof(text, fc.array(part, { minLength: 2, maxLength: 3 }));
    const args = fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.oneof(fc.integer(), text), {
      maxKeys: 3,
    });
    const turn = fc.oneof(
      content.map((c): ChatMessage[] => [{ role: 'user', content: c }]),
      content.map((c): ChatMessage[] => [{ role: 'assistant', content: c }]),
      fc
        .tuple(
          fc.option(text, { nil: null }),
          fc.array(fc.tuple(args, fc.option(content, { nil: null })), { minLength: 1, maxLength: 3 }),
        )
        .map(([said, calls]): ChatMessage[] => {
          const ids = calls.map((_, i) => `call_${i}`);
          return [
            {
              role: 'assistant',
              content: said,
              tool_calls: calls.map(([a], i) => ({
                id: ids[i] as string,
                type: 'function' as const,
                function: { name: `tool${i}`, arguments: JSON.stringify(a) },
              })),
            },
            ...calls.map(
              ([, result], i): ChatMessage => ({
                role: 'tool',
                content: result,
                tool_call_id: ids[i] as string,
                name: `tool${i}`,
              }),
            ),
          ];
        }),
    );
    const conversationArb = fc
      .tuple(
        fc.option(text, { nil: undefined }),
        fc.array(turn, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
      )
      .map(([system, turns, mark, native]) => {
        const list: ChatMessage[] = [
          ...(system ? [{ role: 'system' as const, content: system }] : []),
          ...turns.flat(),
        ];
        return mark ? applyAnthropicCacheControl(list, { nativeAnthropic: native }) : list;
      });
    fc.assert(
      fc.property(conversationArb, (list) => {
        expect(fromAnthropicRequest(toAnthropicRequest(list))).toEqual(list);
      }),
      { numRuns: 300 },
    );
  });
});

describe('fromAnthropicResponse', () => {
  it('joins text blocks and turns tool_use blocks into tool_calls', () => {
    const message = fromAnthropicResponse({
      content: [
        { type: 'text', text: 'Let me look. ', citations: null },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.ts' }, caller: { type: 'direct' } },
        { type: 'text', text: 'And this.', citations: null },
        { type: 'tool_use', id: 'toolu_2', name: 'ls', input: {}, caller: { type: 'direct' } },
      ],
    } as never);
    expect(message).toEqual({
      role: 'assistant',
      content: 'Let me look. And this.',
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'ls', arguments: '{}' } },
      ],
    });
  });

  it('gives null content for a reply of only tool calls and an empty string for an empty reply', () => {
    const onlyCalls = fromAnthropicResponse({
      content: [{ type: 'tool_use', id: 't', name: 'ls', input: {}, caller: { type: 'direct' } }],
    } as never);
    expect(onlyCalls.content).toBeNull();
    expect(fromAnthropicResponse({ content: [] } as never)).toEqual({ role: 'assistant', content: '' });
  });

  it('leaves out thinking blocks', () => {
    const message = fromAnthropicResponse({
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'Answer', citations: null },
      ],
    } as never);
    expect(message).toEqual({ role: 'assistant', content: 'Answer' });
  });
});
