// JSON schemas shared by the routes (OpenAPI at /docs). Deep message validation (roles, tool calls, keys) is
// workflows/validation.ts, shared with the client; these schemas reject wrong types, ranges the store cannot hold
// (integer columns) and metadata text PostgreSQL cannot store (format `dc-text`, validators.ts) before anything
// is written (issue #9 §1, §7).

/** Largest integer an `integer` column (and a token count) holds. */
export const MAX_INT32 = 2_147_483_647;
/** Largest accepted paging offset (search, compactions). */
export const MAX_OFFSET = 1_000_000;
/** Largest accepted context window (tokens). */
export const MAX_CONTEXT_LENGTH = 100_000_000;

export const errorSchema = {
  type: 'object',
  properties: { error: { type: 'string' }, message: { type: 'string' }, statusCode: { type: 'integer' } },
} as const;

/** Metadata text: a string PostgreSQL can store exactly (no NUL, no unpaired surrogate). */
export const textSchema = (maxLength: number, minLength = 0) =>
  ({ type: 'string', format: 'dc-text', minLength, maxLength }) as const;

export const chatMessageSchema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] },
    // Content is stored losslessly whatever it holds (NUL and unpaired surrogates included: infra/db/messageRows.ts).
    content: { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: { type: 'object' } }] },
    tool_calls: { type: 'array', items: { type: 'object' } },
    tool_call_id: { type: 'string' },
    name: { type: 'string' },
  },
  additionalProperties: true,
} as const;

const tokenCount = { type: 'integer', minimum: 0, maximum: MAX_INT32 } as const;

export const usageSchema = {
  type: 'object',
  properties: { prompt_tokens: tokenCount, completion_tokens: tokenCount, total_tokens: tokenCount },
  additionalProperties: true,
} as const;

export const idempotencyKeySchema = { ...textSchema(200, 1) } as const;

export const conversationIdParam = {
  type: 'object',
  required: ['conversationId'],
  properties: { conversationId: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$' } },
} as const;

export const offsetSchema = { type: 'integer', minimum: 0, maximum: MAX_OFFSET } as const;

export const statusSchema = { type: 'object', additionalProperties: true } as const;
