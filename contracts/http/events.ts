// HTTP contract of the tenant's event feed (workers/gateway/routes/events.ts, issue #14 §2): Server-Sent Events,
// resumable (the `Last-Event-ID` header, or `after`), optionally one conversation's.

import { type Static, Type } from 'typebox';
import { CONVERSATION_ID_PATTERN } from './conversations.js';

export const EVENT_TYPES = [
  'session:compress',
  'compaction:started',
  'compaction:completed',
  'compaction:failed',
  'notice',
] as const;

export const EventsQuery = Type.Object(
  {
    conversationId: Type.Optional(Type.String({ pattern: CONVERSATION_ID_PATTERN })),
    after: Type.Optional(
      Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Resume after this event id' }),
    ),
  },
  { additionalProperties: false },
);
export type EventsQuery = Static<typeof EventsQuery>;

export const EventStream = Type.String({
  description:
    'text/event-stream: one frame per event — `id` (resume with Last-Event-ID), `event` (its type: ' +
    `${EVENT_TYPES.join(', ')}) and \`data\`, the JSON {id, type, conversation_id, session_id, compaction_id, ` +
    'created_at, payload}; `session:compress` carries SPEC §13.5’s payload; `: keep-alive` comments while quiet',
});
