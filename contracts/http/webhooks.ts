// HTTP contract of a tenant's webhooks (workers/gateway/routes/webhooks.ts, issue #14 §2): register an endpoint (its
// secret is shown once), list and delete them, and read an endpoint's deliveries.

import { type Static, Type } from 'typebox';
import { HTTP_URL_PATTERN } from '../validation.js';
import { isoDateTime, nullable, text } from './common.js';

export const WebhookParams = Type.Object({ webhookId: Type.String({ pattern: '^wh_[0-9a-f]{16}$' }) });

export const CreateWebhookBody = Type.Object(
  {
    // The pattern without its case-insensitive flag (JSON Schema has none): a lower-case scheme.
    url: Type.String({ pattern: HTTP_URL_PATTERN.source, maxLength: 2_000, description: 'http:// or https://' }),
    description: Type.Optional(text(500)),
    secret: Type.Optional(
      Type.String({ minLength: 16, maxLength: 200, pattern: '^\\S+$', description: 'Default: one is generated' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

const webhookFields = {
  id: Type.String(),
  url: Type.String(),
  description: nullable(Type.String()),
  createdAt: isoDateTime,
  dispatchedThrough: Type.Integer({ description: 'Events up to this id were handed to delivery' }),
};

export const Webhook = Type.Object(webhookFields);

export const CreatedWebhook = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      description:
        'Shown once. Deliveries carry x-dctx-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>',
    }),
  },
  { description: 'The registered endpoint: it gets the tenant’s events from now on' },
);

export const WebhookList = Type.Object({ webhooks: Type.Array(Webhook) });

export const DeliveryList = Type.Object(
  {
    deliveries: Type.Array(
      Type.Object({
        eventId: Type.Integer(),
        status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
        attempts: Type.Integer(),
        lastStatusCode: nullable(Type.Integer()),
        lastError: nullable(Type.String()),
        updatedAt: isoDateTime,
        deliveredAt: nullable(isoDateTime),
      }),
    ),
  },
  { description: 'The endpoint’s deliveries, newest event first' },
);

export const DeletedWebhook = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });
