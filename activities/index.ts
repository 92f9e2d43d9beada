// All activities of the worker, built from injected dependencies (one pg pool per process, the summarizer), each
// wrapped by the guard (heartbeats, non-retryable classification of errors no retry can fix: activities/guard.ts).
import type { Kysely } from 'kysely';
import type { CacheTtl, CompressionConfig, HostPolicy, Summarizer } from '../engine/index.js';
import type { AppServerPool } from '../infra/codex/pool.js';
import type { Database } from '../infra/db/schema.js';
import type { ProvidersConfig } from '../infra/llm/providers.js';
import type { Metrics } from '../infra/metrics/registry.js';
import { createAppServerActivities } from './codexAppServer.js';
import {
  type AnthropicCompactorFor,
  createCompactionActivities,
  createReplayActivities,
  type SummarizerFor,
} from './compaction/index.js';
import { createConversationActivities } from './conversation.js';
import { guardActivities } from './guard.js';
import { createRespondActivities, respondDepsFrom } from './respond.js';
import { createWebhookActivities } from './webhooks.js';

export interface ActivityDeps {
  db: Kysely<Database>;
  baseConfig: CompressionConfig;
  /** SPEC §19 host policy keys of config.yaml (defaults when absent). */
  baseHostPolicy?: HostPolicy;
  summarizer: Summarizer | null;
  /** Per-conversation summarizer (its main model decides the summary model, SPEC §2.3); wins over `summarizer`. */
  summarizerFor?: SummarizerFor;
  /** SPEC §19 `anthropic_native`: the compactor of a conversation's summary route, when it supports blocks. */
  anthropicCompactorFor?: AnthropicCompactorFor;
  /** How often every activity heartbeats while it runs (ms, default 1,000). */
  heartbeatIntervalMs?: number;
  /** config.yaml `prompt_caching.cache_ttl`. */
  cacheTtl?: CacheTtl | null;
  /** config.yaml `providers:` for the agent turn (chat backend mode); null/absent: not available. */
  providers?: ProvidersConfig | null;
  env?: Readonly<Record<string, string | undefined>>;
  respondTimeoutMs?: number;
  /** The worker's Codex app-server processes (SPEC §15.2), for `codex_app_server` providers. */
  appServers?: AppServerPool | null;
  /** Webhooks may go to loopback, private and link-local addresses (DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE). */
  webhooksAllowPrivate?: boolean;
  /** The worker's metrics: activity durations (workers/runtime/createWorker.ts), the summary quality gate. */
  metrics?: Metrics;
  /** config.yaml's `context.engine` (SPEC §10.3); absent: `compressor`. */
  contextEngine?: string;
  /** Where plugin engines are looked for (default `plugins/context_engine/`). */
  pluginDir?: string;
}

export function createActivities(deps: ActivityDeps) {
  return guardActivities(
    {
      ...createConversationActivities(deps),
      ...createCompactionActivities(deps),
      ...createReplayActivities(deps),
      ...createRespondActivities({ db: deps.db, ...respondDepsFrom(deps) }),
      ...createWebhookActivities({ db: deps.db, webhooksAllowPrivate: deps.webhooksAllowPrivate ?? false }),
      ...createAppServerActivities({
        db: deps.db,
        providers: deps.providers ?? null,
        appServers: deps.appServers ?? null,
      }),
    },
    deps.heartbeatIntervalMs ? { heartbeatIntervalMs: deps.heartbeatIntervalMs } : {},
  );
}

export type Activities = ReturnType<typeof createActivities>;
