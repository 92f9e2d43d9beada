// HTTP contract of the history routes (workers/gateway/routes/history.ts, tenant key; issue #14 §6 data lifecycle): the
// tenant's conversations (paged, filtered), a conversation's sessions with their lineage (SPEC §13.3), one session's
// messages, and the JSONL export of a whole conversation. Message pages share the cursor and limit of
// `GET /v1/conversations/:id/messages` (contracts/http/conversations.ts).

import { type Static, Type } from 'typebox';
import { isoDateTime, nextCursor, nullable, pageQuery, text } from './common.js';
import { CONVERSATION_ID_PATTERN } from './conversations.js';

export const DEFAULT_PAGE_LIMIT = 50;

const SESSION_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';

export const SessionParams = Type.Object({
  conversationId: Type.String({ pattern: CONVERSATION_ID_PATTERN }),
  sessionId: Type.String({ pattern: SESSION_ID_PATTERN }),
});

export const ListConversationsQuery = Type.Object(
  {
    ...pageQuery,
    title: Type.Optional(text(500, 1, { description: 'Title contains this text (case-insensitive)' })),
    model: Type.Optional(text(200, 1)),
    updatedAfter: Type.Optional(Type.String({ format: 'date-time' })),
    updatedBefore: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);
export type ListConversationsQuery = Static<typeof ListConversationsQuery>;

export const ConversationSummary = Type.Object({
  conversationId: Type.String(),
  currentSessionId: Type.String(),
  model: Type.String(),
  provider: nullable(Type.String()),
  source: Type.String(),
  title: nullable(Type.String()),
  createdAt: isoDateTime,
  updatedAt: isoDateTime,
  activeMessages: Type.Integer(),
  activeTokens: Type.Integer(),
  compactions: Type.Integer({ description: 'Committed compactions (the current session’s compression_count)' }),
});

export const ConversationList = Type.Object(
  { conversations: Type.Array(ConversationSummary), nextCursor },
  { description: 'The tenant’s conversations, newest updated first' },
);
export type ConversationList = Static<typeof ConversationList>;

export const SessionSummary = Type.Object({
  sessionId: Type.String(),
  parentSessionId: nullable(Type.String()),
  current: Type.Boolean({ description: 'The session the conversation continues in' }),
  source: Type.String(),
  model: nullable(Type.String()),
  provider: nullable(Type.String()),
  title: nullable(Type.String()),
  startedAt: isoDateTime,
  endedAt: nullable(isoDateTime),
  endReason: nullable(Type.String({ description: '`compression` for a session a rotation ended (SPEC §13.3)' })),
  compressionCount: Type.Integer({ description: 'Committed compactions up to this session' }),
});
export type SessionSummary = Static<typeof SessionSummary>;

export const SessionList = Type.Object(
  { conversationId: Type.String(), currentSessionId: Type.String(), sessions: Type.Array(SessionSummary) },
  { description: 'Every session of the conversation, oldest first, linked by parentSessionId (SPEC §13.3 lineage)' },
);
export type SessionList = Static<typeof SessionList>;

export const ExportLines = Type.String({
  description:
    'application/x-ndjson, one JSON object a line: `conversation`, then every `message` of every session in id ' +
    'order (archived ones included, with sessionId, active, compacted, compactionId), every `compaction` (without ' +
    'its phase blobs), every `session`, and `end` with the counts — a stream without the `end` line was cut off',
});
