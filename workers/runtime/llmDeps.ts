// The LLM side of the worker's dependencies from config.yaml (DESIGN.md §5): the configured providers for the agent
// turn, and a summarizer per (main model, provider), resolved once and reused (SPEC §2.3: the summary model defaults
// to the session's main model). With no provider configured, compaction uses the extractive summariser (SPEC §19).
// A `codex_app_server` provider gets the worker's pool of app-server processes (SPEC §15.2), closed with the worker.
import type { ActivityDeps } from '../../activities/index.js';
import type { Summarizer } from '../../engine/index.js';
import { AppServerPool } from '../../infra/codex/pool.js';
import type { LoadedConfig } from '../../infra/config/loadConfig.js';
import { type AnthropicCompactor, anthropicCompactorFor } from '../../infra/llm/anthropicCompaction.js';
import { parseProvidersConfig } from '../../infra/llm/providers.js';
import { createSummarizer, resolveSummarizerPlan } from '../../infra/llm/summarizer.js';

export type LlmDeps = Pick<
  ActivityDeps,
  'providers' | 'summarizerFor' | 'anthropicCompactorFor' | 'cacheTtl' | 'env' | 'appServers'
> & {
  /** True when at least one provider is configured (summaries and chat backend mode available). */
  configured: boolean;
};

export function llmDepsFromConfig(
  config: LoadedConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
  log: (message: string) => void = (m) => console.warn(m),
): LlmDeps {
  const providers = parseProvidersConfig(config.raw);
  const cache = new Map<string, Summarizer | null>();
  const compactors = new Map<string, AnthropicCompactor | null>();
  const keyOf = (model: string | null, provider: string | null) => `${provider ?? ''}\u0000${model ?? ''}`;
  // SPEC §15.2: the app-server processes start on a conversation's first turn, not here.
  const appServer = [...providers.providers.values()].some((p) => p.api === 'codex_app_server');
  return {
    providers,
    ...(appServer ? { appServers: new AppServerPool(env) } : {}),
    cacheTtl: config.promptCaching.cacheTtl,
    env,
    configured: providers.providers.size > 0 || config.auxiliary.baseUrl !== null,
    summarizerFor: ({ model, provider }) => {
      const key = keyOf(model, provider);
      if (!cache.has(key)) {
        cache.set(key, createSummarizer({ config, mainModel: model, mainProvider: provider, env, log }));
      }
      return cache.get(key) ?? null;
    },
    // SPEC §19 `anthropic_native`: the same summary route (SPEC §2.3), when it can summarise into a block.
    anthropicCompactorFor: ({ model, provider }) => {
      const key = keyOf(model, provider);
      if (!compactors.has(key)) {
        const plan = resolveSummarizerPlan({ config, mainModel: model, mainProvider: provider, env, log });
        compactors.set(key, plan ? anthropicCompactorFor(plan, env) : null);
      }
      return compactors.get(key) ?? null;
    },
  };
}
