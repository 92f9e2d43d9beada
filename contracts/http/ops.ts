// HTTP contract of the operations routes (workers/gateway/routes/ops.ts): liveness without a key, Prometheus metrics
// (behind the metrics key when one is configured).
import { type Static, Type } from 'typebox';

export const Healthy = Type.Object({ ok: Type.Boolean() }, { description: 'The database answers' });
export type Healthy = Static<typeof Healthy>;

export const Unhealthy = Type.Object(
  { ok: Type.Boolean(), error: Type.String() },
  { description: 'The database does not answer' },
);
export type Unhealthy = Static<typeof Unhealthy>;

/** The Prometheus text exposition format (sent as is, never serialised through a schema). */
export const MetricsText = {
  content: { 'text/plain': { schema: Type.String({ description: 'Prometheus text exposition format' }) } },
};
