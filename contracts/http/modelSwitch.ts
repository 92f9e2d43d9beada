// HTTP contract of the model switch (workers/gateway/routes/modelSwitch.ts, SPEC §4.6): the new model, its provider
// and an optional explicit window (like `model.context_length`, SPEC §4.1); the answer is the conversation's status
// right after the switch, its notices included (the cache warning of §4.6, the §4.5 autoraise notice).

import { type Static, Type } from 'typebox';
import { MAX_CONTEXT_LENGTH, text } from './common.js';

export const SwitchModelBody = Type.Object(
  {
    model: text(200, 1),
    provider: Type.Optional(text(100, 1)),
    contextLength: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONTEXT_LENGTH })),
  },
  { additionalProperties: false },
);
export type SwitchModelBody = Static<typeof SwitchModelBody>;
