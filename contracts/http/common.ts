// Building blocks of the HTTP contract (DESIGN.md §2 contracts/, §6): the limits the store can hold, metadata text,
// the error body every route answers with, and the helpers the route groups' schemas are made of. TypeBox schemas are
// plain JSON schema (the gateway validates requests with its own ajv, workers/gateway/validators.ts, and serialises
// responses with fast-json-stringify); the TypeScript types are inferred from them.
//
// Responses are serialised with their schema, which drops undeclared properties and coerces declared types: an open
// shape (message content, stats, policies) is declared as an open object, so its JSON is written as it is.
import { type Static, type TSchema, type TUnsafe, Type } from 'typebox';
import { MAX_IDEMPOTENCY_KEY_LENGTH, MAX_TOKEN_COUNT } from '../validation.js';

/** Largest integer an `integer` column (and a token count) holds. */
export const MAX_INT32 = MAX_TOKEN_COUNT;
/** Longest idempotency key (contracts/validation.ts). */
export const MAX_KEY_LENGTH = MAX_IDEMPOTENCY_KEY_LENGTH;
/** Largest accepted paging offset (search, compactions). */
export const MAX_OFFSET = 1_000_000;
/** Largest accepted context window (tokens). */
export const MAX_CONTEXT_LENGTH = 100_000_000;

export { MESSAGE_ROLES } from '../validation.js';

/** Metadata text: a string PostgreSQL can store exactly (format `dc-text`: no NUL, no unpaired surrogate). */
export const text = (maxLength: number, minLength = 0, options: { description?: string } = {}) =>
  Type.String({ format: 'dc-text', minLength, maxLength, ...options });

export const offset = Type.Integer({ minimum: 0, maximum: MAX_OFFSET });

/** A string out of a fixed list, typed as that list's union. */
export const stringEnum = <const T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/** Any JSON object, written as it is (additional properties kept); typed as `T`. */
export const openObject = <T = Record<string, unknown>>(description: string) =>
  Type.Unsafe<T>({ type: 'object', additionalProperties: true, description });

/** `schema` or null (a type list rather than anyOf, so the serializer picks the branch by type alone). */
export const nullable = <T extends TSchema>(schema: T): TUnsafe<Static<T> | null> => {
  const { type, ...rest } = schema as TSchema & { type?: string; enum?: unknown[] };
  if (typeof type !== 'string') return Type.Unsafe<Static<T> | null>({ anyOf: [schema, { type: 'null' }] });
  return Type.Unsafe<Static<T> | null>({
    ...rest,
    type: [type, 'null'],
    ...(rest.enum ? { enum: [...rest.enum, null] } : {}),
  });
};

/** An ISO 8601 date-time, as `Date.prototype.toISOString()` writes it. */
export const isoDateTime = Type.String({ format: 'date-time' });

/** Rows per page of a keyset-paged list, and the opaque cursor a previous page answered as `nextCursor`. */
export const MAX_PAGE_LIMIT = 500;
export const pageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z0-9_-]+$' })),
};
export const nextCursor = nullable(
  Type.String({ description: 'Pass as `cursor` for the next page; null: this was the last page' }),
);

function withoutRequired(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutRequired);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // The keyword (a list of names), not a property that happens to be called `required`.
    if (key !== 'required' || !Array.isArray(value)) out[key] = withoutRequired(value);
  }
  return out;
}

/**
 * A document the workflow published and PostgreSQL keeps (the conversation status): typed as the current shape, but
 * no property is required on the wire, so a snapshot written by an older version is still answered as it is stored.
 */
export const snapshot = <T extends TSchema>(schema: T): TUnsafe<Static<T>> =>
  Type.Unsafe<Static<T>>(withoutRequired(schema) as TSchema);

/** True when A and B are the same type (both ways assignable): schema and contract cannot drift apart. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Fails to compile unless T is `true`. */
export type Assert<T extends true> = T;

// ---------------------------------------------------------------------------------------------------------------
// Errors: one body for every error status (workers/gateway/errors.ts).

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503;

/** The reason phrase of each status the gateway answers with (the `error` field). */
export const HTTP_REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

const MEANINGS: Record<ErrorStatus, string> = {
  400: 'invalid input; the message names the field (nothing was written)',
  401: 'missing, malformed or unknown bearer key',
  403: 'the admin key is required, or the key’s scope (read) does not cover the route',
  404: 'unknown resource (or one of another tenant)',
  409: 'conflict: an idempotency key reused with another message, or a compaction that cannot be replayed',
  413: 'the request body is larger than the limit',
  415: 'the request body is not JSON in UTF-8',
  422: 'the request cannot be carried out (e.g. no LLM provider configured, or the model refused it)',
  429: 'over a request limit of the tenant or the key (the message names it); retry after Retry-After',
  500: 'internal error',
  502: 'the model provider did not answer',
  503: 'PostgreSQL or Temporal is unavailable, or the worker did not catch up in time; retry after Retry-After',
};

const errorBody = (description: string) =>
  Type.Object(
    { error: Type.String(), message: Type.String(), statusCode: Type.Integer() },
    { description, additionalProperties: false },
  );

export const ErrorBody = errorBody('An error: the reason phrase, a message saying what happened, the status');
export type ErrorBody = Static<typeof ErrorBody>;

/** What every tenant route can answer: bad input, no or a wrong key, a key whose scope does not cover it, a request
 * limit, an outage, a fault; routes with a body add 413 and 415. */
export const TENANT_READ_ERRORS = [400, 401, 403, 429, 500, 503] as const;
export const TENANT_WRITE_ERRORS = [...TENANT_READ_ERRORS, 413, 415] as const;

/** The error responses of a route, one schema per status (each described in the OpenAPI document). */
export function errorResponses<const C extends ErrorStatus>(...codes: C[]): { [K in C]: typeof ErrorBody } {
  const out: Partial<Record<ErrorStatus, typeof ErrorBody>> = {};
  for (const code of codes) out[code] = errorBody(`${HTTP_REASONS[code]}: ${MEANINGS[code]}`);
  return out as { [K in C]: typeof ErrorBody };
}
