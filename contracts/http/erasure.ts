// HTTP contract of the erasure routes (workers/gateway/routes/erasure.ts, admin key; issue #14 §6 data lifecycle): erase
// a conversation or a whole tenant — its PostgreSQL rows and its Temporal workflows — with an explicit confirmation
// that repeats the id, and read the audit trail of erasures (who, what, when, how many rows; never content).

import { type Static, Type } from 'typebox';
import { TENANT_ID_PATTERN } from './admin.js';
import { isoDateTime, nextCursor, nullable, openObject, pageQuery, text } from './common.js';
import { CONVERSATION_ID_PATTERN } from './conversations.js';

export const TenantConversationParams = Type.Object({
  tenantId: Type.String({ pattern: TENANT_ID_PATTERN }),
  conversationId: Type.String({ pattern: CONVERSATION_ID_PATTERN }),
});

export const EraseBody = Type.Object(
  {
    confirm: Type.Optional(
      text(200, 0, {
        description: 'Required: the id being erased (the conversation id, or the tenant id), repeated',
      }),
    ),
    requestedBy: Type.Optional(text(200, 1, { description: 'Who asks (kept in the audit row; default `admin`)' })),
    reason: Type.Optional(text(2000, 1, { description: 'Why (kept in the audit row); no message content' })),
  },
  { additionalProperties: false },
);
export type EraseBody = Static<typeof EraseBody>;

export const ListErasuresQuery = Type.Object(
  { ...pageQuery, tenantId: Type.Optional(Type.String({ pattern: TENANT_ID_PATTERN })) },
  { additionalProperties: false },
);

export const Erasure = Type.Object(
  {
    erasureId: Type.Integer(),
    scope: Type.Unsafe<'conversation' | 'tenant'>({ type: 'string', enum: ['conversation', 'tenant'] }),
    tenantId: Type.String(),
    conversationId: nullable(Type.String()),
    requestedBy: Type.String(),
    reason: nullable(Type.String()),
    status: Type.Unsafe<'rows_deleted' | 'completed'>({
      type: 'string',
      enum: ['rows_deleted', 'completed'],
      description: '`rows_deleted`: the rows are gone, Temporal’s histories not yet (erase again to finish)',
    }),
    rowsDeleted: openObject<Record<string, number>>('Rows deleted per table'),
    workflowsDeleted: Type.Integer({ description: 'Workflow executions whose history was deleted' }),
    requestedAt: isoDateTime,
    completedAt: nullable(isoDateTime),
  },
  { description: 'One erasure, as its audit row records it' },
);
export type Erasure = Static<typeof Erasure>;

export const ErasureList = Type.Object(
  { erasures: Type.Array(Erasure), nextCursor },
  { description: 'The audit trail of erasures, newest first' },
);
export type ErasureList = Static<typeof ErasureList>;
