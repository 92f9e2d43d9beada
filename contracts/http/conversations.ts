// HTTP contract of the conversation routes (workers/gateway/routes/conversations.ts): create, post messages,
// prepared context, manual compress, status, messages. Deep message validation (roles, tool calls, keys) is
// workflows/validation.ts, shared with the client; these schemas reject wrong types, ranges the store cannot hold and
// metadata text PostgreSQL cannot store before anything is written (issue #9 §1, §7). Message content is any JSON
// and is answered exactly as stored (NUL characters and unpaired surrogates included).

import { type Static, Type } from 'typebox';
import type { ChatMessage } from '../../engine/index.js';
import type { ChatTool } from '../conversation.js';
import {
  isoDateTime,
  MAX_CONTEXT_LENGTH,
  MAX_INT32,
  MAX_KEY_LENGTH,
  MESSAGE_ROLES,
  nextCursor,
  nullable,
  openObject,
  pageQuery,
  text,
} from './common.js';
import { CompactionReport, ConversationStatusBody, PublishedStatus, TurnUsage } from './status.js';

export const CONVERSATION_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$';
const conversationId = Type.String({ pattern: CONVERSATION_ID_PATTERN });

export const ConversationParams = Type.Object({ conversationId });
/** One stored message of a conversation (its row id, as `GET …/messages` lists it). */
export const MessageParams = Type.Object({
  conversationId,
  messageId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
});

// ---- requests ----

export const CreateConversationBody = Type.Object(
  {
    conversationId: Type.Optional(conversationId),
    model: Type.Optional(text(200, 1)),
    provider: Type.Optional(text(100, 1)),
    contextLength: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONTEXT_LENGTH })),
    source: Type.Optional(text(64, 1)),
    title: Type.Optional(text(500)),
  },
  { additionalProperties: false },
);
export type CreateConversationBody = Static<typeof CreateConversationBody>;

/** A chat message on the way in: the shape is checked here, the rules (roles, tool pairs) by workflows/validation. */
const IncomingChatMessage = Type.Unsafe<ChatMessage>({
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: [...MESSAGE_ROLES] },
    // Content is stored losslessly whatever it holds (NUL and unpaired surrogates included: infra/db/messageRows.ts).
    content: { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: { type: 'object' } }] },
    tool_calls: { type: 'array', items: { type: 'object' } },
    tool_call_id: { type: 'string' },
    name: { type: 'string' },
  },
  additionalProperties: true,
});

const tokenCount = Type.Integer({ minimum: 0, maximum: MAX_INT32 });

export const UsageBody = Type.Object(
  {
    prompt_tokens: Type.Optional(tokenCount),
    completion_tokens: Type.Optional(tokenCount),
    total_tokens: Type.Optional(tokenCount),
  },
  { additionalProperties: true },
);

export const PostMessagesBody = Type.Object(
  {
    messages: Type.Array(
      Type.Object(
        { message: IncomingChatMessage, idempotencyKey: text(MAX_KEY_LENGTH, 1) },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
    usage: Type.Optional(UsageBody),
    wait: Type.Optional(
      Type.Boolean({ description: 'Wait until the batch is processed (including any compaction it triggers)' }),
    ),
    respond: Type.Optional(
      Type.Boolean({
        description:
          'Chat backend mode: run the main model after appending and answer with its reply (tool calls for the ' +
          'client to run; send their results the same way). Needs a configured LLM provider.',
      }),
    ),
    stream: Type.Optional(
      Type.Boolean({
        description:
          'With respond: Server-Sent Events instead of one JSON answer — `accepted` once the messages are stored, ' +
          'the reply’s text as `delta` events ({content}), `discard` (drop the text heard so far: the turn runs ' +
          'again), then `reply` (the body answered without stream) or `error` ({status, message}). Refusals ' +
          'before the messages are stored are the usual JSON errors.',
      }),
    ),
    tools: Type.Optional(
      Type.Unsafe<ChatTool[]>({
        type: 'array',
        items: { type: 'object' },
        description: 'OpenAI-shaped function tools for respond',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PostMessagesBody = Static<typeof PostMessagesBody>;

export const ContextQuery = Type.Object(
  { model: Type.Optional(text(200, 1)), provider: Type.Optional(text(100, 1)) },
  { additionalProperties: false },
);

export const CompactBody = Type.Object({ focusTopic: Type.Optional(text(2000)) }, { additionalProperties: false });

/** Without `limit` and `cursor` every row is answered (as before paging existed); with them, a page. */
export const MessagesQuery = Type.Object(
  {
    archived: Type.Optional(Type.Boolean()),
    ...pageQuery,
  },
  { additionalProperties: false },
);

// ---- responses ----

/** A chat message as stored: any JSON object, answered exactly (unknown fields, NUL, unpaired surrogates). */
const StoredChatMessage = openObject<ChatMessage>('A chat message, exactly as it was stored');
const ToolCall = openObject<NonNullable<ChatMessage['tool_calls']>[number]>('A tool call the client must run');

export const CreatedConversation = Type.Object(
  { conversationId: Type.String(), status: PublishedStatus },
  { description: 'The conversation (created, or as it was when it existed already) and its status' },
);
export type CreatedConversation = Static<typeof CreatedConversation>;

const counts = {
  accepted: Type.Integer({ description: 'Messages in the request' }),
  stored: Type.Integer({ description: 'Messages stored by this request' }),
  duplicates: Type.Integer({ description: 'Messages whose idempotency key was stored before (no-ops)' }),
};

export const AcceptedMessages = Type.Object(counts, {
  description: 'Stored in PostgreSQL; the conversation workflow processes the batch in the background',
});
export type AcceptedMessages = Static<typeof AcceptedMessages>;

export const ProcessedMessages = Type.Object(
  { ...counts, status: PublishedStatus },
  { description: 'wait: true — stored and processed (compactions included); the status after it' },
);
export type ProcessedMessages = Static<typeof ProcessedMessages>;

export const ChatTurnReply = Type.Object(
  {
    accepted: counts.accepted,
    turnId: Type.String(),
    replyMessageId: Type.Integer(),
    finishReason: nullable(Type.String()),
    usage: TurnUsage,
    compaction: nullable(CompactionReport),
    status: ConversationStatusBody,
    reply: StoredChatMessage,
    toolCalls: Type.Array(ToolCall),
  },
  { description: 'respond: true — the model’s stored reply; run its toolCalls and send their results' },
);
export type ChatTurnReply = Static<typeof ChatTurnReply>;

/** The 200 answer of a batch: processed (wait: true) or the model's reply (respond: true). */
export const MessagesAnswer = Type.Union([ProcessedMessages, ChatTurnReply], {
  description: 'wait: true — the batch processed; respond: true — the model’s reply',
});

export const PreparedContext = Type.Object(
  {
    conversationId: Type.String(),
    sessionId: Type.String(),
    model: Type.String(),
    provider: nullable(Type.String()),
    promptCaching: Type.Object({ enabled: Type.Boolean(), reason: Type.String(), line: Type.String() }),
    estimatedTokens: Type.Number(),
    messages: Type.Array(StoredChatMessage),
  },
  { description: 'The compacted, sanitised, cache-marked message list to send to the model' },
);
export type PreparedContext = Static<typeof PreparedContext>;

export const StoredMessage = Type.Object({
  id: Type.Integer(),
  position: Type.Number(),
  active: Type.Boolean(),
  compacted: Type.Boolean(),
  pinned: Type.Boolean(),
  timestamp: isoDateTime,
  message: StoredChatMessage,
});
export type StoredMessage = Static<typeof StoredMessage>;

export const StoredMessages = Type.Object(
  {
    sessionId: Type.String(),
    messages: Type.Array(StoredMessage),
    nextCursor,
  },
  { description: 'The rows of the session with their flags (active: position order; archived: id order)' },
);
export type StoredMessages = Static<typeof StoredMessages>;

export const PinnedMessage = Type.Object(
  { messageId: Type.Integer(), pinned: Type.Boolean() },
  { description: 'Whether an operator pinned the message (SPEC §19 rehydrate_pinned re-injects it after a summary)' },
);
export type PinnedMessage = Static<typeof PinnedMessage>;
