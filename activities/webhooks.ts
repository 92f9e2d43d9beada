// Webhook deliveries (issue #14 §2), the side effects of workflows/webhookDelivery.ts: what an endpoint has not been
// handed yet, one signed POST of one event (retried by the workflow's retry policy: durable, with backoff), and the
// end of an event's delivery (delivered or given up) with the endpoint's cursor moved past it. At least once: a POST
// that reached the endpoint but whose answer was lost is sent again with the same event id, for the receiver to
// de-duplicate. Every attempt is recorded (webhook_deliveries), so an operator sees what the endpoint answered.
//
// The signature: `x-dctx-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`; a receiver
// recomputes it over the raw body and rejects an old `t` (replays).
import { createHmac } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import { eventById, eventsAfter } from '../infra/db/events.js';
import type { Database } from '../infra/db/schema.js';
import { activeWebhook, advanceWebhook, recordDelivery } from '../infra/db/webhooks.js';
import { webhookDestinationProblem } from '../infra/http/webhookDestination.js';

export interface WebhookRef {
  tenantId: string;
  webhookId: string;
}

/** How long one POST may take. */
const POST_TIMEOUT_MS = 10_000;

/** The signature header of a body sent at `timestamp` (seconds). */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

export function createWebhookActivities(deps: { db: Kysely<Database>; webhooksAllowPrivate?: boolean }) {
  const { db } = deps;
  const allowPrivate = deps.webhooksAllowPrivate === true;
  return {
    /** The events the endpoint has not been handed yet (oldest first); `active: false` once it was deleted. */
    async webhookBacklog(input: WebhookRef & { limit: number }): Promise<{ active: boolean; eventIds: number[] }> {
      const webhook = await activeWebhook(db, input.tenantId, input.webhookId);
      if (!webhook) return { active: false, eventIds: [] };
      const events = await eventsAfter(db, input.tenantId, webhook.dispatchedThrough, { limit: input.limit });
      return { active: true, eventIds: events.map((e) => e.id) };
    },

    /** One signed POST of one event; throws (retryable) unless the endpoint answered 2xx. */
    async deliverWebhookEvent(input: WebhookRef & { eventId: number }): Promise<{ delivered: boolean }> {
      const [webhook, event] = await Promise.all([
        activeWebhook(db, input.tenantId, input.webhookId),
        eventById(db, input.tenantId, input.eventId),
      ]);
      if (!webhook || !event) return { delivered: false }; // deleted meanwhile, or an event that is gone: nothing to send
      // Checked again before every POST: the name may resolve inside the operator's networks by now.
      const problem = await webhookDestinationProblem(webhook.url, { allowPrivate });
      if (problem) throw ApplicationFailure.nonRetryable(`the endpoint ${problem}`, 'WebhookDestinationRefused');
      const body = JSON.stringify({
        id: event.id,
        type: event.type,
        tenant_id: input.tenantId,
        conversation_id: event.conversationId,
        session_id: event.sessionId,
        compaction_id: event.compactionId,
        created_at: event.createdAt,
        payload: event.payload,
      });
      const timestamp = Math.floor(Date.now() / 1000);
      const key = { webhookId: input.webhookId, eventId: input.eventId };
      let status: number | null = null;
      let error: string;
      try {
        const response = await fetch(webhook.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'durable-context-webhooks/0.1',
            'x-dctx-event-id': String(event.id),
            'x-dctx-event-type': event.type,
            'x-dctx-delivery-attempt': String(Context.current().info.attempt),
            'x-dctx-signature': webhookSignature(webhook.secret, timestamp, body),
          },
          body,
          signal: AbortSignal.timeout(POST_TIMEOUT_MS),
          redirect: 'manual',
        });
        status = response.status;
        await response.body?.cancel();
        if (status >= 200 && status < 300) {
          await recordDelivery(db, input.tenantId, key, {
            status: 'delivered',
            statusCode: status,
            error: null,
            attempt: true,
          });
          return { delivered: true };
        }
        error = `the endpoint answered ${status}`;
      } catch (err) {
        error = `the endpoint could not be reached: ${err instanceof Error ? err.message : String(err)}`;
      }
      await recordDelivery(db, input.tenantId, key, { status: 'pending', statusCode: status, error, attempt: true });
      throw ApplicationFailure.retryable(error, 'WebhookNotDelivered');
    },

    /** The event's delivery is over: given up (failed) or done; the endpoint's cursor moves past it. */
    async finishWebhookEvent(input: WebhookRef & { eventId: number; error: string | null }): Promise<void> {
      if (input.error !== null) {
        const key = { webhookId: input.webhookId, eventId: input.eventId };
        await recordDelivery(db, input.tenantId, key, {
          status: 'failed',
          statusCode: null,
          error: input.error.slice(0, 2_000),
          attempt: false,
        });
      }
      await advanceWebhook(db, input.tenantId, input.webhookId, input.eventId);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
