// One webhook endpoint's deliveries (issue #14 §2): a workflow per endpoint, ID `webhook:<tenantId>:<webhookId>`,
// started when the endpoint is registered. It hands the endpoint the tenant's events in id order, each one a signed
// POST retried durably by Temporal with backoff (1 s, doubling, at most 5 minutes apart, 10 attempts), then the next;
// an event whose attempts ran out is recorded as failed and the endpoint gets the next one. It looks for new events
// every second while they come and up to every 8 seconds when quiet, ends when the endpoint is deleted, and continues
// as new after a while so its history stays short. Deterministic: activities do the I/O (activities/webhooks.ts).
import { ActivityFailure, continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities, WebhookRef } from '../activities/webhooks.js';

const store = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
const delivery = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

/** Pause before the next look, by how many looks in a row found nothing (ms). */
const IDLE_PAUSES_MS = [1_000, 2_000, 4_000, 8_000];
/** Looks before continuing as new (each adds a few history events); a busy run continues as new when told to. */
const LOOKS_PER_RUN = 300;

function reason(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

export async function webhookDeliveryWorkflow(ref: WebhookRef): Promise<void> {
  let idle = 0;
  for (let look = 0; look < LOOKS_PER_RUN; look++) {
    const backlog = await store.webhookBacklog({ ...ref, limit: 50 });
    if (!backlog.active) return;
    for (const eventId of backlog.eventIds) {
      let error: string | null = null;
      try {
        await delivery.deliverWebhookEvent({ ...ref, eventId });
      } catch (err) {
        error = reason(err);
      }
      await store.finishWebhookEvent({ ...ref, eventId, error });
      // A full backlog is ~6 history events per event: continue as new before the history grows long.
      if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof webhookDeliveryWorkflow>(ref);
    }
    if (backlog.eventIds.length > 0) idle = 0;
    else {
      await sleep(IDLE_PAUSES_MS[Math.min(idle, IDLE_PAUSES_MS.length - 1)] as number);
      idle += 1;
    }
  }
  await continueAsNew<typeof webhookDeliveryWorkflow>(ref);
}
