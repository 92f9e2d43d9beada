// A tenant's webhook endpoints (tenant key; issue #14 §2): register one (it gets the tenant's events from now on,
// signed with its secret, which is shown once), list them, delete one, and read one's deliveries (status, attempts,
// the endpoint's last answer). Registering starts the endpoint's delivery workflow (workflows/webhookDelivery.ts);
// when Temporal cannot be reached, the endpoint is not kept (503 with Retry-After; register again).
// Schemas: contracts/http/webhooks.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorResponses, TENANT_READ_ERRORS, TENANT_WRITE_ERRORS } from '../../../contracts/http/common.js';
import {
  CreatedWebhook,
  CreateWebhookBody,
  DeletedWebhook,
  DeliveryList,
  WebhookList,
  WebhookParams,
} from '../../../contracts/http/webhooks.js';
import { createWebhook, deleteWebhook, listDeliveries, listWebhooks } from '../../../infra/db/webhooks.js';
import { webhookDestinationProblem } from '../../../infra/http/webhookDestination.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import type { Conversations } from '../conversations.js';
import { InvalidRequestError, notFound } from '../errors.js';

export interface WebhookRouteDeps extends TenantRouteGate {
  conversations: Conversations;
  /** Destinations inside the operator's networks are allowed (infra/http/webhookDestination.ts). */
  webhooksAllowPrivate?: boolean;
}

const DeliveriesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })) },
  { additionalProperties: false },
);

export function webhookRoutes(deps: WebhookRouteDeps): FastifyPluginAsyncTypebox {
  const readDb = deps.readDb ?? deps.db;
  return async (app) => {
    requireTenant(app, tenantGate(deps));

    app.post(
      '/v1/webhooks',
      {
        schema: {
          tags: ['events'],
          summary: 'Register a webhook endpoint: the tenant’s events from now on, signed (HMAC-SHA256), retried',
          body: CreateWebhookBody,
          response: { 201: CreatedWebhook, ...errorResponses(...TENANT_WRITE_ERRORS) },
        },
      },
      async (request, reply) => {
        const { url, description, secret } = request.body;
        const problem = await webhookDestinationProblem(url, { allowPrivate: deps.webhooksAllowPrivate === true });
        if (problem) throw new InvalidRequestError(`body.url ${problem}`);
        const created = await createWebhook(deps.db, request.tenantId, {
          url,
          description: description ?? null,
          secret: secret ?? null,
        });
        try {
          await deps.conversations.temporal.startWebhookDelivery(request.tenantId, created.id);
        } catch (err) {
          // Nothing half-registered: an endpoint without its delivery workflow would never get an event.
          await deleteWebhook(deps.db, request.tenantId, created.id);
          throw err;
        }
        return reply.status(201).send(created);
      },
    );

    app.get(
      '/v1/webhooks',
      {
        schema: {
          tags: ['events'],
          summary: 'The tenant’s webhook endpoints (never their secrets)',
          response: { 200: WebhookList, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request) => ({ webhooks: await listWebhooks(readDb, request.tenantId) }),
    );

    app.delete(
      '/v1/webhooks/:webhookId',
      {
        schema: {
          tags: ['events'],
          summary: 'Delete a webhook endpoint: no event is sent to it any more',
          params: WebhookParams,
          response: { 200: DeletedWebhook, ...errorResponses(...TENANT_READ_ERRORS, 404) },
        },
      },
      async (request) => {
        const { webhookId } = request.params;
        if (!(await deleteWebhook(deps.db, request.tenantId, webhookId)))
          throw notFound(`unknown webhook '${webhookId}'`);
        return { id: webhookId, deleted: true as const };
      },
    );

    app.get(
      '/v1/webhooks/:webhookId/deliveries',
      {
        schema: {
          tags: ['events'],
          summary: 'An endpoint’s deliveries, newest event first: status, attempts, its last answer',
          params: WebhookParams,
          querystring: DeliveriesQuery,
          response: { 200: DeliveryList, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request) => ({
        deliveries: await listDeliveries(
          readDb,
          request.tenantId,
          request.params.webhookId,
          request.query.limit ?? 100,
        ),
      }),
    );
  };
}
