// Random ChatMessages (SPEC §1.2) and request fields for the property tests of the request bodies
// (openaiMessages.test.ts, anthropicBody.test.ts): every role, string / null / part content, tool calls, cache
// markers, escapes, lone surrogates and CJK text, and a runtime property the wire never carries.
import fc from 'fast-check';
import type { ChatMessage } from '../../../engine/types.js';

export const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }), // lone surrogates: JSON.stringify escapes them
  fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0001', '\u2028', 'a', '字', 'é', '😀', '接口', 'ｓ') }),
);
const marker = fc.option(fc.constantFrom({ type: 'ephemeral' as const }, { type: 'ephemeral' as const, ttl: '1h' }), {
  nil: undefined,
});
const part = fc.oneof(
  fc.record({ type: fc.constant('text' as const), text, cache_control: marker }, { requiredKeys: ['type', 'text'] }),
  fc.record({
    type: fc.constant('image_url' as const),
    image_url: fc.record({ url: fc.webUrl(), detail: fc.constantFrom('low', 'high') }, { requiredKeys: ['url'] }),
  }),
);
const toolCall = fc.record({
  id: text,
  type: fc.constant('function' as const),
  function: fc.record({ name: text, arguments: text }),
});
export const message: fc.Arbitrary<ChatMessage> = fc
  .record(
    {
      role: fc.constantFrom('system', 'user', 'assistant', 'tool'),
      content: fc.oneof(text, fc.constant(null), fc.array(part, { maxLength: 3 })),
      tool_calls: fc.array(toolCall, { maxLength: 2 }),
      tool_call_id: text,
      name: text,
      cache_control: marker,
      // Runtime properties (SPEC §1.2): one no wire carries, a tool error and a system turn's own fields that the
      // Anthropic dialect sends (anthropicMessages.ts TOOL_ERROR, SYSTEM_TURN_FIELDS).
      row_id: fc.nat(),
      is_error: fc.boolean(),
      anthropic_turn_fields: fc.record({ output_config: fc.record({ effort: text }) }),
    },
    { requiredKeys: ['role', 'content'] },
  )
  .map((m) => m as unknown as ChatMessage);
export const rest = fc.record(
  {
    tools: fc.array(fc.record({ type: fc.constant('function'), function: fc.record({ name: text }) }), {
      minLength: 1,
      maxLength: 2,
    }),
    max_tokens: fc.nat(),
  },
  { requiredKeys: [] },
);
