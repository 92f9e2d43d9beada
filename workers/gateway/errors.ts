// One error handler for the gateway (DESIGN.md §7 fastify): bad input gets a 4xx whose message names the field;
// unknown things get 404; a reused idempotency key with another message 409; an outage of PostgreSQL or Temporal
// 503 with Retry-After and a message naming the system (issue #9 §6); only real faults are 5xx.
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isTemporalOutage, TemporalUnavailableError } from '../../clients/conversationClient.js';
import { HTTP_REASONS } from '../../contracts/http/common.js';
import { ConfigError } from '../../engine/index.js';
import {
  classifyDbError,
  isCancelledStatement,
  isDatabaseOutage,
  refusedWriteMessage,
} from '../../infra/db/dbErrors.js';
import {
  CompactionNotFoundError,
  ConversationNotFoundError,
  IdempotencyConflictError,
  SessionNotFoundError,
} from '../../infra/db/storeErrors.js';

/** A request refused before anything is written (HTTP 400); the message names the field. */
export class InvalidRequestError extends Error {
  override name = 'InvalidRequestError';
}

/** Chat backend mode cannot run for this conversation (no provider, no key): refused before anything is stored. */
export class ChatUnavailableError extends Error {
  override name = 'ChatUnavailableError';
}

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new HttpError(404, what);

/** Seconds a client should wait before retrying after an outage. */
const OUTAGE_RETRY_AFTER_S = 2;

export interface Classified {
  status: number;
  message: string;
  retryAfter?: number;
}

/** Status, message and Retry-After of an error, as every dialect of the gateway answers it. */
export function classify(error: FastifyError | Error): Classified {
  if (error instanceof HttpError) {
    return {
      status: error.statusCode,
      message: error.message,
      ...(error.retryAfterSeconds ? { retryAfter: error.retryAfterSeconds } : {}),
    };
  }
  if ('validation' in error && error.validation) return { status: 400, message: error.message };
  if (error instanceof InvalidRequestError || error instanceof ConfigError)
    return { status: 400, message: error.message };
  if (error instanceof IdempotencyConflictError) return { status: 409, message: error.message };
  if (error instanceof ChatUnavailableError) return { status: 422, message: error.message };
  if (error instanceof ConversationNotFoundError) {
    return { status: 404, message: `unknown conversation '${error.conversationId}'` };
  }
  if (error instanceof WorkflowNotFoundError) return { status: 404, message: 'unknown conversation' };
  if (error instanceof SessionNotFoundError || error instanceof CompactionNotFoundError) {
    return { status: 404, message: error.message };
  }
  if (error instanceof TemporalUnavailableError) {
    return { status: 503, message: error.message, retryAfter: error.retryAfterSeconds };
  }
  if (isTemporalOutage(error)) {
    return { status: 503, message: 'Temporal is unavailable; retry shortly', retryAfter: OUTAGE_RETRY_AFTER_S };
  }
  const db = classifyDbError(error);
  if (db === 'unavailable') {
    return {
      status: 503,
      message: 'the database (PostgreSQL) is unavailable; retry shortly',
      retryAfter: OUTAGE_RETRY_AFTER_S,
    };
  }
  // Contention that outlasted the retries (SPEC §13.6): nothing was written; try again.
  if (isDatabaseOutage(error)) {
    return {
      status: 503,
      message: 'the database (PostgreSQL) is busy; retry shortly',
      retryAfter: OUTAGE_RETRY_AFTER_S,
    };
  }
  if (isCancelledStatement(error)) {
    return {
      status: 503,
      message: 'the database (PostgreSQL) cancelled the statement (statement_timeout or a cancel)',
    };
  }
  // Input the edge validation let through but PostgreSQL refused: nothing was written (the transaction rolled back).
  if (db === 'permanent')
    return { status: 400, message: `the request could not be stored: ${refusedWriteMessage(error)}` };
  if (error instanceof WorkflowUpdateFailedError) {
    // Update validators reject bad requests (e.g. an unknown or too small model) before anything happens; a model
    // call that failed permanently (no provider, auth, context too long) is the request's problem too (422); one
    // that kept failing transiently is the upstream's (502).
    const root = rootCause(error);
    if (root instanceof ApplicationFailure && root.nonRetryable === false && root !== error.cause) {
      return { status: 502, message: `the model provider did not answer: ${root.message}` };
    }
    return { status: 422, message: root.message };
  }
  const status = (error as FastifyError).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return { status, message: error.message };
  return { status: 500, message: 'internal error' };
}

/** The innermost cause (update → activity → application failure), whose message says what happened. */
function rootCause(error: Error): Error {
  let current: Error = error;
  while (current.cause instanceof Error) current = current.cause;
  return current;
}

export function errorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const { status, message, retryAfter } = classify(error);
  if (status >= 500 && status !== 503) request.log.error({ err: error }, 'request failed');
  if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
  void reply.status(status).send({ error: HTTP_REASONS[status] ?? 'Error', message, statusCode: status });
}
