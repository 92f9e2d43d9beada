// HTTP contract of the drop-in OpenAI endpoints, Chat Completions and Responses (workers/gateway/routes/openaiChat.ts,
// issue #12):
// the request in OpenAI's own shape — only what the gateway needs is checked here, every other field goes to the
// provider as the client sent it — and OpenAI's error body, which every refusal of this endpoint answers with.
import { type Static, Type } from 'typebox';
import { nullable, openObject } from './common.js';

const RequestMessage = Type.Object(
  { role: Type.String({ minLength: 1, description: 'system, developer, user, assistant or tool' }) },
  { additionalProperties: true },
);

export const ChatCompletionsBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 200 }),
    messages: Type.Array(RequestMessage, { minItems: 1 }),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true, description: 'An OpenAI Chat Completions request; other fields are passed through' },
);
export type ChatCompletionsBody = Static<typeof ChatCompletionsBody>;

export const ChatCompletionsHeaders = Type.Object(
  {
    'x-conversation-id': Type.Optional(
      Type.String({ description: 'the conversation; without it, one derived from the opening of the history' }),
    ),
  },
  { additionalProperties: true },
);

export const ResponsesBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 200 }),
    input: Type.Union([Type.String(), Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1 })]),
    instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true, description: 'An OpenAI Responses request; other fields are passed through' },
);

/** OpenAI's error body: `{error: {message, type, param, code}}`. */
export const OpenAIErrorBody = Type.Object({
  error: Type.Object(
    {
      message: Type.String(),
      type: Type.String(),
      param: nullable(Type.String()),
      code: nullable(Type.String()),
    },
    { additionalProperties: true },
  ),
});
export type OpenAIErrorBody = Static<typeof OpenAIErrorBody>;

/** A response as the provider answered it (streamed: `text/event-stream` of the Responses event types). */
export const ResponseObjectBody = openObject('an OpenAI response object, as the provider returned it');

/** A chat completion as the provider answered it (streamed: `text/event-stream` of chunks, then `[DONE]`). */
export const ChatCompletionResponse = openObject('an OpenAI chat.completion object, as the provider returned it');
