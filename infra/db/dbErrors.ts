// What a PostgreSQL error means for the caller (issue #9 §1 and §6): an error that can never succeed (the data, a
// constraint or a limit refused it) must not be retried — retrying it forever wedged conversations — and an outage
// (connection refused or lost, server shutting down) is answered 503 with Retry-After, never 500.
import { isStalePreparedStatement } from './preparedStatements.js';
import { isRetryableWriteError, sqlState } from './writeRetry.js';

/** Names of the SQLSTATEs a refused write most often carries (for messages without the offending value). */
const CONDITION_NAMES: Readonly<Record<string, string>> = {
  '22001': 'string data right truncation',
  '22003': 'numeric value out of range',
  '22007': 'invalid datetime format',
  '22008': 'datetime field overflow',
  '22012': 'division by zero',
  '22021': 'character not in repertoire',
  '22023': 'invalid parameter value',
  '22025': 'invalid escape sequence',
  '2202E': 'array subscript error',
  '22P02': 'invalid text representation',
  '22P05': 'untranslatable character',
  '23502': 'not null violation',
  '23503': 'foreign key violation',
  '23505': 'unique violation',
  '23514': 'check violation',
  '54000': 'program limit exceeded',
  '54001': 'statement too complex',
};

/**
 * SQLSTATE classes no retry can fix: 21 cardinality, 22 data exception, 23 integrity constraint, 42 syntax or access
 * rule, 54 program limit, 0A feature not supported, 2F/38/39 routine exceptions.
 */
const PERMANENT_CLASSES = new Set(['21', '22', '23', '42', '54', '0A', '2F', '38', '39']);

/** Class 08 connection exception, 53 insufficient resources, 57P01–57P03 shutdown / cannot connect now. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03']);
const UNAVAILABLE_CLASSES = new Set(['08', '53']);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
const NETWORK_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|Connection refused|server closed the connection/i;

export type DbErrorKind = 'permanent' | 'unavailable';

function networkCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((inner) => networkCode(inner))) return 'ECONNREFUSED';
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * `permanent`, `unavailable` (an outage, or a prepared statement a schema change made stale), or null for anything
 * else (including the retryable 40001/40P01/55P03).
 */
export function classifyDbError(error: unknown): DbErrorKind | null {
  // A schema change under a prepared statement: the next attempt parses it again (preparedStatements.ts).
  if (isStalePreparedStatement(error)) return 'unavailable';
  const state = sqlState(error);
  if (state !== undefined && state.length === 5) {
    if (UNAVAILABLE_STATES.has(state) || UNAVAILABLE_CLASSES.has(state.slice(0, 2))) return 'unavailable';
    if (PERMANENT_CLASSES.has(state.slice(0, 2))) return 'permanent';
  }
  if (networkCode(error)) return 'unavailable';
  if (error instanceof Error && NETWORK_MESSAGES.test(error.message)) return 'unavailable';
  return null;
}

/**
 * An outage (`unavailable`), or contention that outlasted SPEC §13.6's retries (serialization failure, deadlock,
 * lock timeout): nothing was written, and trying again later can succeed. Answered 503 with Retry-After by the
 * gateway, never 500.
 */
export function isDatabaseOutage(error: unknown): boolean {
  return classifyDbError(error) === 'unavailable' || isRetryableWriteError(error);
}

/**
 * A statement PostgreSQL cancelled (query_canceled: an operator's statement_timeout, or a cancel request). Unlike
 * contention it may fail the same way every time (a statement that always takes longer than the timeout), so the
 * gateway answers 503 naming it, without Retry-After: a client does not retry it on a timer.
 */
export function isCancelledStatement(error: unknown): boolean {
  return sqlState(error) === '57014';
}

/**
 * A message for a refused write that names the condition but never quotes the data (PostgreSQL's own message may
 * contain the offending value, i.e. message content, which must not travel into workflow histories or logs).
 */
export function refusedWriteMessage(error: unknown): string {
  const state = sqlState(error) ?? 'unknown';
  const name = CONDITION_NAMES[state];
  return `PostgreSQL refused the data (SQLSTATE ${state}${name ? `: ${name}` : ''})`;
}
