// JSON schemas shared by the routes (OpenAPI at /docs). Deep message validation (roles, tool calls, keys) is
// workflows/validation.ts, shared with the client; these schemas describe the shapes for the docs and reject
// wrong top-level types early.
export const errorSchema = {
  type: 'object',
  properties: { error: { type: 'string' }, message: { type: 'string' }, statusCode: { type: 'integer' } },
} as const;

export const chatMessageSchema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] },
    content: { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: { type: 'object' } }] },
    tool_calls: { type: 'array', items: { type: 'object' } },
    tool_call_id: { type: 'string' },
    name: { type: 'string' },
  },
  additionalProperties: true,
} as const;

export const usageSchema = {
  type: 'object',
  properties: {
    prompt_tokens: { type: 'number', minimum: 0 },
    completion_tokens: { type: 'number', minimum: 0 },
    total_tokens: { type: 'number', minimum: 0 },
  },
  additionalProperties: true,
} as const;

export const conversationIdParam = {
  type: 'object',
  required: ['conversationId'],
  properties: { conversationId: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$' } },
} as const;

export const statusSchema = { type: 'object', additionalProperties: true } as const;
