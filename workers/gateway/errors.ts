// One error handler for the gateway (DESIGN.md §7 fastify): bad input gets a 4xx whose message names the field;
// unknown things get 404; only real faults are 5xx.

import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError } from '../../engine/index.js';
import { InvalidRequestError } from '../../infra/temporal/conversationClient.js';

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new HttpError(404, what);

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  500: 'Internal Server Error',
};

function classify(error: FastifyError | Error): { status: number; message: string } {
  if (error instanceof HttpError) return { status: error.statusCode, message: error.message };
  if ('validation' in error && error.validation) return { status: 400, message: error.message };
  if (error instanceof InvalidRequestError) return { status: 400, message: error.message };
  if (error instanceof ConfigError) return { status: 400, message: error.message };
  if (error instanceof WorkflowNotFoundError) return { status: 404, message: 'unknown conversation' };
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
  const { status, message } = classify(error);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  void reply.status(status).send({ error: REASONS[status] ?? 'Error', message, statusCode: status });
}
