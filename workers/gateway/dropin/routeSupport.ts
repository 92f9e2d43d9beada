// What the drop-in routes of both dialects (issue #12) share: their dependencies, how an error is classified before
// the dialect words it (the provider's own error passed on as it came; an unreachable provider an outage; anything
// else as the gateway's error handler classifies it, with the request field it names), and the error handler that
// writes the dialect's body with the status and Retry-After.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { CacheTtl } from '../../../engine/index.js';
import type { ProvidersConfig } from '../../../infra/llm/providers.js';
import { UpstreamHttpError, UpstreamUnavailableError } from '../../../infra/llm/upstreamErrors.js';
import type { TenantRouteGate } from '../auth.js';
import type { Conversations } from '../conversations.js';
import { classify } from '../errors.js';
import { DropinRequestError } from './conversationFlow.js';
import type { DropinDeps } from './upstream.js';

export interface DropinRouteDeps extends TenantRouteGate {
  conversations: Conversations;
  providers?: ProvidersConfig | null;
  cacheTtl: CacheTtl | null;
  env?: Readonly<Record<string, string | undefined>>;
}

export function dropinDeps(deps: DropinRouteDeps): DropinDeps {
  return {
    conversations: deps.conversations,
    providers: deps.providers ?? null,
    cacheTtl: deps.cacheTtl,
    ...(deps.env ? { env: deps.env } : {}),
  };
}

/** Seconds a client waits before retrying when the provider cannot be reached. */
const UPSTREAM_RETRY_AFTER_S = 2;

/** An error as a dialect words it. */
export interface DropinError {
  status: number;
  message: string;
  /** The provider's own error body, to pass on unchanged (null: the gateway words it). */
  providerBody: Record<string, unknown> | null;
  /** The request field the error is about (a schema violation, a history the store cannot keep). */
  param: string | null;
  /** The provider could not be reached. */
  unreachable: boolean;
  retryAfter: string | null;
}

/** The request field a schema violation names (`messages`, `model`, …). */
function validationParam(error: FastifyError): string | null {
  const first = error.validation?.[0];
  if (!first) return null;
  const missing = (first.params as { missingProperty?: string } | undefined)?.missingProperty;
  const path = first.instancePath
    .replace(/^\//, '')
    .replace(/\/(\d+)/g, '[$1]')
    .replace(/\//g, '.');
  return missing ? (path ? `${path}.${missing}` : missing) : path || null;
}

function dropinError(error: FastifyError | Error): DropinError {
  if (error instanceof UpstreamHttpError) {
    const { status, body, retryAfter, message } = error;
    return { status, message, providerBody: body, param: null, unreachable: false, retryAfter };
  }
  if (error instanceof UpstreamUnavailableError) {
    const retryAfter = String(UPSTREAM_RETRY_AFTER_S);
    return { status: 503, message: error.message, providerBody: null, param: null, unreachable: true, retryAfter };
  }
  const classified = classify(error);
  const param =
    error instanceof DropinRequestError
      ? error.param
      : 'validation' in error && error.validation
        ? validationParam(error)
        : null;
  return {
    status: classified.status,
    message: classified.message,
    providerBody: null,
    param,
    unreachable: false,
    retryAfter: classified.retryAfter !== undefined ? String(classified.retryAfter) : null,
  };
}

/** The route group's error handler: `body` words the error in the dialect. */
export function dropinErrorHandler(body: (error: DropinError) => Record<string, unknown>) {
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void => {
    const classified = dropinError(error);
    if (classified.status >= 500 && classified.status !== 503 && !classified.providerBody) {
      request.log.error({ err: error }, 'request failed');
    }
    if (classified.retryAfter !== null) void reply.header('retry-after', classified.retryAfter);
    void reply.status(classified.status).send(body(classified));
  };
}
