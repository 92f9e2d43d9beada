// HTTP contract of the drop-in Anthropic Messages endpoints (workers/gateway/routes/anthropicMessages.ts, issue #12):
// the request in Anthropic's own shape — only what the gateway needs is checked here, every other field goes to the
// provider as the client sent it — and Anthropic's error body, which every refusal of these endpoints answers with.
import { type Static, Type } from 'typebox';
import { openObject } from './common.js';

// A system turn inside `messages` (the SDK's SystemMessageParam; Claude Code sends them with recent models) is a
// message like the others.
const RequestMessage = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')]),
    content: Type.Unknown(),
  },
  { additionalProperties: true, required: ['role', 'content'] },
);

export const MessagesBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 200 }),
    max_tokens: Type.Integer({ minimum: 1 }),
    messages: Type.Array(RequestMessage, { minItems: 1 }),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true, description: 'An Anthropic Messages request; other fields are passed through' },
);
export type MessagesBody = Static<typeof MessagesBody>;

export const CountTokensBody = Type.Object(
  { model: Type.String({ minLength: 1, maxLength: 200 }), messages: Type.Array(RequestMessage, { minItems: 1 }) },
  { additionalProperties: true, description: 'An Anthropic count_tokens request' },
);

/** Anthropic's error body: `{type: 'error', error: {type, message}}`. */
export const AnthropicErrorBody = Type.Object({
  type: Type.Literal('error'),
  error: Type.Object({ type: Type.String(), message: Type.String() }, { additionalProperties: true }),
});
export type AnthropicErrorBody = Static<typeof AnthropicErrorBody>;

export const MessageResponse = openObject('an Anthropic message object, as the provider returned it');
export const TokenCountResponse = openObject('the provider’s count: {input_tokens}');
