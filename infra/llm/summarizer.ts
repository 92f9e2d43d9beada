// The host's summarizer (SPEC §8.5.6, §9.2): sends the summary prompt as one user message to the model chosen by
// `auxiliary.compression.*` (SPEC §2.3) and resolves with the reply text, or rejects with an LlmFailure.
// Retries belong to the summarize activity's retry policy; here each call is one attempt (plus, for a distinct
// summary model that failed permanently, one call to the main model). Refusals, truncated and empty replies are
// failures; error text is never returned as a summary (SPEC §9.6).
import { type CompressionConfig, ConfigError } from '../../engine/config.js';
import type { Summarizer, SummaryRequest } from '../../engine/types.js';
import type { LoadedConfig } from '../config/loadConfig.js';
import { chatCompletion } from './chat.js';
import { createProviderClient, type ProviderClient } from './clients.js';
import {
  classifyProviderError,
  emptySummaryFailure,
  isTransientFailure,
  type LlmCallSite,
  summaryRefusedFailure,
  summaryTruncatedFailure,
} from './errors.js';
import {
  type ProviderConfig,
  type ProvidersConfig,
  parseProvidersConfig,
  providerById,
  providerServingModel,
} from './providers.js';
import type { ChatResult } from './types.js';

/** Anthropic requires max_tokens: 2 × budget (SPEC §9.2 forbids less), at least this floor. Budgets are at most
 *  12,000 tokens (SPEC §6.2), so the value stays at or below 24,000; any lower cap could truncate a summary. */
export const SUMMARY_MAX_TOKENS_FLOOR = 4_096;
/** Provider id reported for `auxiliary.compression.base_url` without an explicit provider. */
export const CUSTOM_ENDPOINT_ID = 'custom';

export interface SummaryTarget {
  provider: ProviderConfig;
  model: string;
}

export interface SummarizerPlan {
  primary: SummaryTarget;
  /** The main model, tried once when a distinct primary fails permanently; null when primary is the main model. */
  fallback: SummaryTarget | null;
  /** Per-attempt timeout (SPEC §9.2), seconds. */
  timeoutSeconds: number;
}

export interface CreateSummarizerOptions {
  config: LoadedConfig;
  /** The session's main model; default `model.default`. */
  mainModel?: string | null;
  /** The session's main provider id; default `model.provider` (or the provider resolved for `model.default`). */
  mainProvider?: string | null;
  /** Environment with the API keys; default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Operational messages (the fallback to the main model); default console.warn. */
  log?: (message: string) => void;
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution (SPEC §2.3).

function configuredIds(providers: ProvidersConfig): string {
  return providers.providers.size === 0 ? 'none configured' : [...providers.providers.keys()].join(', ');
}

/** `auxiliary.compression.provider` → a provider id (null: none can be resolved). */
function summaryProviderId(
  setting: string,
  summaryModel: string | null,
  mainProvider: string | null,
  providers: ProvidersConfig,
): string | null {
  if (setting === 'main') return mainProvider;
  if (setting === 'auto') {
    return summaryModel === null ? mainProvider : providerServingModel(summaryModel, providers.providers, mainProvider);
  }
  if (!providerById(providers, setting)) {
    throw ConfigError.badValue(
      'auxiliary.compression.provider',
      `"auto", "main" or a configured provider id (${configuredIds(providers)})`,
      setting,
    );
  }
  return setting;
}

/** `auxiliary.compression.base_url`: an OpenAI-compatible endpoint. It gets an explicitly named provider's key,
 *  never the key of a provider picked by `auto`/`main` (a key is not sent to an endpoint it was not made for). */
function customEndpoint(baseUrl: string, explicit: ProviderConfig | null): ProviderConfig {
  return {
    id: explicit?.id ?? CUSTOM_ENDPOINT_ID,
    kind: 'openai',
    api: 'chat_completions',
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKeyEnv: explicit?.apiKeyEnv ?? null,
    headers: { ...(explicit?.headers ?? {}) },
    models: [],
    cachingRoute: null,
  };
}

function isExplicitProvider(setting: string): boolean {
  return setting !== 'auto' && setting !== 'main';
}

/**
 * Which model and endpoint write summaries, the fallback, and the per-attempt timeout. Null when no provider can
 * be resolved or no model is known: compaction then uses the fallback summary (DESIGN.md §5). Throws ConfigError
 * for an invalid `providers:` section or an unknown `auxiliary.compression.provider`.
 */
export function resolveSummarizerPlan(options: CreateSummarizerOptions): SummarizerPlan | null {
  const { config } = options;
  const providers = parseProvidersConfig(config.raw);
  const mainModel = options.mainModel === undefined ? providers.main.model : options.mainModel;
  const mainProviderId = options.mainProvider === undefined ? providers.main.provider : options.mainProvider;
  const mainProvider = providerById(providers, mainProviderId);
  const aux = config.auxiliary;
  const model = aux.model ?? mainModel;
  if (model === null) return null;

  const providerId = summaryProviderId(aux.provider, aux.model, mainProvider?.id ?? null, providers);
  const resolved = providerById(providers, providerId);
  const provider =
    aux.baseUrl !== null ? customEndpoint(aux.baseUrl, isExplicitProvider(aux.provider) ? resolved : null) : resolved;
  if (!provider) return null;

  const primary: SummaryTarget = { provider, model };
  const main: SummaryTarget | null =
    mainModel !== null && mainProvider ? { provider: mainProvider, model: mainModel } : null;
  const distinct = main !== null && (aux.baseUrl !== null || provider.id !== main.provider.id || model !== main.model);
  return {
    primary,
    fallback: distinct ? main : null,
    timeoutSeconds: summaryTimeoutSeconds(aux.timeout, config.compression),
  };
}

/** SPEC §2.3: `auxiliary.compression.timeout`, else `compression.summary_timeout_seconds`. */
export function summaryTimeoutSeconds(auxTimeout: number | null, compression: CompressionConfig): number {
  return auxTimeout ?? compression.summaryTimeoutSeconds;
}

/** SPEC §9.2: never below 2 × budget. Only the Anthropic kind sends it (its API requires max_tokens). */
export function anthropicSummaryMaxTokens(budgetTokens: number): number {
  return Math.max(2 * Math.ceil(budgetTokens), SUMMARY_MAX_TOKENS_FLOOR);
}

// ---------------------------------------------------------------------------------------------------------------
// One summary call.

function replyText(result: ChatResult): string {
  const content = result.message.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** SPEC §9.1 / §9.2: refusals, truncated and empty replies reject; nothing of them is returned. */
function checkedSummary(result: ChatResult, site: LlmCallSite): string {
  const refused =
    (result.refusal !== null && result.refusal !== '') ||
    result.finishReason === 'refusal' ||
    result.finishReason === 'content_filter';
  if (refused) throw summaryRefusedFailure(site);
  if (result.finishReason === 'length') throw summaryTruncatedFailure(site, result.rawFinishReason ?? 'length');
  const text = replyText(result);
  if (text.trim() === '') throw emptySummaryFailure(site);
  return text;
}

type ClientFor = (target: SummaryTarget) => ProviderClient;

async function summarizeOnce(target: SummaryTarget, clientFor: ClientFor, request: SummaryRequest): Promise<string> {
  const site: LlmCallSite = { provider: target.provider.id, model: target.model };
  let client: ProviderClient;
  try {
    client = clientFor(target);
  } catch (err) {
    throw classifyProviderError(err, site);
  }
  const result = await chatCompletion({
    provider: client,
    model: target.model,
    messages: [{ role: 'user', content: request.prompt }],
    ...(client.kind === 'anthropic' ? { maxTokens: anthropicSummaryMaxTokens(request.budgetTokens) } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
    cache: null,
  });
  return checkedSummary(result, site);
}

function clientCache(timeoutMs: number, env: CreateSummarizerOptions['env']): ClientFor {
  const clients = new Map<SummaryTarget, ProviderClient>();
  return (target) => {
    const cached = clients.get(target);
    if (cached) return cached;
    const client = createProviderClient(target.provider, { timeoutMs, ...(env ? { env } : {}) });
    clients.set(target, client);
    return client;
  };
}

function failureType(err: unknown): string {
  return typeof err === 'object' && err !== null && 'type' in err ? String((err as { type: unknown }).type) : 'error';
}

/** A Summarizer for a resolved plan (exported for tests and for hosts that resolve plans themselves). */
export function summarizerForPlan(
  plan: SummarizerPlan,
  options: Pick<CreateSummarizerOptions, 'env' | 'log'> = {},
): Summarizer {
  const log = options.log ?? ((message: string) => console.warn(message));
  const clientFor = clientCache(plan.timeoutSeconds * 1000, options.env);
  return async (request) => {
    try {
      return await summarizeOnce(plan.primary, clientFor, request);
    } catch (err) {
      const fallback = plan.fallback;
      if (!fallback || isTransientFailure(err) || request.signal?.aborted) throw err;
      log(
        `Summary model '${plan.primary.model}' on provider '${plan.primary.provider.id}' failed (${failureType(err)}); ` +
          `falling back to the main model '${fallback.model}' on provider '${fallback.provider.id}' for this summary.`,
      );
      return summarizeOnce(fallback, clientFor, request);
    }
  };
}

/**
 * SPEC §2.3 / §9.2 summarizer for the given main model, or null when no provider is configured (compaction then
 * uses the fallback summary of SPEC §9.5).
 */
export function createSummarizer(options: CreateSummarizerOptions): Summarizer | null {
  const plan = resolveSummarizerPlan(options);
  return plan ? summarizerForPlan(plan, options) : null;
}
