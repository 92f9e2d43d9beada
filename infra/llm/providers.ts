// Provider configuration (DESIGN.md §5): the `providers:` section and `model.default` / `model.provider` of
// config.yaml. SPEC §2.1 owns neither, so they are validated here, at start-up, with the same error texts
// (`Invalid configuration: <key>: unknown key` / `...: expected <expectation>, got <value as JSON>`).
// API keys never live in the file: a provider names the environment variable that holds its key.
import { z } from 'zod';
import { ConfigError } from '../../engine/config.js';
import { APP_SERVER_RULES, type AppServerSettings, appServerSettingsFor } from '../codex/settings.js';
import {
  type FieldRule,
  HTTP_URL_PATTERN,
  isPlainObject,
  type PlainObject,
  validateField,
} from '../config/fieldRules.js';
import { ProviderKeyMissingError, providerApiKey } from './providerKeys.js';

export type { AppServerSettings };

export type ProviderKind = 'openai' | 'anthropic';
/**
 * How an OpenAI-kind provider runs chat turns: Chat Completions, the Responses API (SPEC §15.1), or a Codex
 * app-server that owns the thread's context (SPEC §15.2).
 */
export type ProviderApi = 'chat_completions' | 'responses' | 'codex_app_server';
/** The provider name `promptCachingState` understands (SPEC §12.1), or null when caching never applies. */
export type CachingRoute = 'anthropic' | 'openrouter' | null;

export interface ProviderConfig {
  /** The key under `providers:` (e.g. `openai`, `local`). */
  id: string;
  kind: ProviderKind;
  /** OpenAI kind: `chat_completions` (default) or `responses`; always `chat_completions` for the Anthropic kind. */
  api: ProviderApi;
  /** OpenAI kind: includes the `/v1` path; Anthropic kind: the host root (the SDK appends `/v1/messages`). */
  baseUrl: string;
  /** Environment variable holding the API key; null: the endpoint needs no key (e.g. a local Ollama). */
  apiKeyEnv: string | null;
  /** Extra request headers (e.g. OpenRouter's `HTTP-Referer`, `X-Title`). */
  headers: Record<string, string>;
  /** Models this provider serves, for `auxiliary.compression.provider: auto` (SPEC §2.3). */
  models: string[];
  cachingRoute: CachingRoute;
  /**
   * The account the key belongs to, for SPEC §15.1 replay (checkpoints go back only to the account that issued
   * them): a stable label for a key that rotates (the OAuth token of `openai-codex`); absent: a fingerprint of the key.
   */
  account?: string;
  /** `api: codex_app_server`: how the app-server is run (infra/codex/settings.ts). */
  appServer?: AppServerSettings;
}

export interface MainModelConfig {
  /** `model.default`: the session's main model, or null when none is configured. */
  model: string | null;
  /** `model.provider`, or the provider resolved for `model.default`; null when no provider is configured. */
  provider: string | null;
}

export interface ProvidersConfig {
  /** Configured providers in config order (well-known ids referenced elsewhere are added with defaults). */
  providers: ReadonlyMap<string, ProviderConfig>;
  main: MainModelConfig;
}

interface WellKnownProvider {
  kind: ProviderKind;
  baseUrl: string;
  apiKeyEnv: string;
  api?: ProviderApi;
}

/** Defaults of the provider ids SPEC §4.2 names; any other id must give its `base_url`. */
export const WELL_KNOWN_PROVIDERS: Readonly<Record<string, WellKnownProvider>> = Object.freeze({
  openai: { kind: 'openai', baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY' },
  anthropic: { kind: 'anthropic', baseUrl: 'https://api.anthropic.com', apiKeyEnv: 'ANTHROPIC_API_KEY' },
  openrouter: { kind: 'openai', baseUrl: 'https://openrouter.ai/api/v1', apiKeyEnv: 'OPENROUTER_API_KEY' },
  // The ChatGPT Codex route (SPEC §4.2): the Responses API only; its key is the account's OAuth access token.
  'openai-codex': {
    kind: 'openai',
    baseUrl: 'https://chatgpt.com/backend-api/codex',
    apiKeyEnv: 'OPENAI_CODEX_ACCESS_TOKEN',
    api: 'responses',
  },
});

/** Keywords of `auxiliary.compression.provider` (SPEC §2.3); they cannot name a provider. */
const RESERVED_IDS = new Set(['auto', 'main']);
const PROVIDER_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

const PROVIDER_RULES = {
  kind: { allowed: 'openai or anthropic', schema: z.enum(['openai', 'anthropic']) },
  api: {
    allowed: 'chat_completions, responses or codex_app_server',
    schema: z.enum(['chat_completions', 'responses', 'codex_app_server']),
  },
  base_url: { allowed: 'URL string', schema: z.string().regex(HTTP_URL_PATTERN) },
  api_key_env: {
    allowed: `null or environment variable name matching ${ENV_NAME_PATTERN.source}`,
    schema: z.string().regex(ENV_NAME_PATTERN).nullable(),
  },
  headers: { allowed: 'map of string → string', schema: z.record(z.string(), z.string()) },
  models: { allowed: 'list of non-empty strings', schema: z.array(z.string().min(1)) },
  account: { allowed: 'non-empty string', schema: z.string().min(1) },
  ...APP_SERVER_RULES,
} satisfies Record<string, FieldRule<unknown>>;

type ProviderFields = { [K in keyof typeof PROVIDER_RULES]?: z.infer<(typeof PROVIDER_RULES)[K]['schema']> };

function validateProviderFields(prefix: string, section: PlainObject): ProviderFields {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(section)) {
    const rule = Object.hasOwn(PROVIDER_RULES, key) ? PROVIDER_RULES[key as keyof typeof PROVIDER_RULES] : undefined;
    if (!rule) throw ConfigError.unknownKey(`${prefix}.${key}`);
    if (value === undefined) continue;
    out[key] = validateField(`${prefix}.${key}`, rule as FieldRule<unknown>, value);
  }
  return out as ProviderFields;
}

function validateProviderId(id: string): void {
  if (PROVIDER_ID_PATTERN.test(id) && !RESERVED_IDS.has(id)) return;
  throw ConfigError.badValue(
    `providers.${id}`,
    `a provider id matching ${PROVIDER_ID_PATTERN.source} other than "auto" and "main"`,
    id,
  );
}

/** OpenRouter is recognised by id or by host, so `providers.router: {base_url: https://openrouter.ai/...}` caches too. */
function cachingRouteOf(id: string, kind: ProviderKind, baseUrl: string): CachingRoute {
  if (kind === 'anthropic') return 'anthropic';
  if (id === 'openrouter' || /^https?:\/\/([^/]*\.)?openrouter\.ai(?=[:/]|$)/i.test(baseUrl)) return 'openrouter';
  return null;
}

function buildProvider(id: string, fields: ProviderFields): ProviderConfig {
  const known = Object.hasOwn(WELL_KNOWN_PROVIDERS, id) ? WELL_KNOWN_PROVIDERS[id] : undefined;
  const kind = fields.kind ?? known?.kind ?? 'openai';
  const api = fields.api ?? known?.api ?? 'chat_completions';
  if (kind === 'anthropic' && api !== 'chat_completions') {
    throw ConfigError.badValue(`providers.${id}.api`, 'chat_completions (the only API of an anthropic provider)', api);
  }
  const apiKeyEnv = fields.api_key_env === undefined ? (known?.apiKeyEnv ?? null) : fields.api_key_env;
  const headers = { ...(fields.headers ?? {}) };
  // An app-server calls its own upstream: `base_url` is optional and names the Responses endpoint Codex is sent to.
  const upstream = { baseUrl: fields.base_url, apiKeyEnv, headers };
  const appServer = appServerSettingsFor(`providers.${id}`, api, fields, upstream);
  const baseUrl =
    fields.base_url ?? known?.baseUrl ?? (appServer ? `codex-app-server:${appServer.codexHome}` : undefined);
  if (baseUrl === undefined) {
    throw ConfigError.badValue(
      `providers.${id}.base_url`,
      'URL string (required for providers other than openai, openai-codex, anthropic and openrouter)',
      null,
    );
  }
  return {
    id,
    kind,
    api,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKeyEnv,
    headers,
    models: [...(fields.models ?? [])],
    cachingRoute: cachingRouteOf(id, kind, baseUrl),
    ...(fields.account !== undefined ? { account: fields.account } : {}),
    ...(appServer ? { appServer } : {}),
  };
}

/** A well-known provider id that is referenced but not listed gets its defaults. */
export function defaultProvider(id: string): ProviderConfig | null {
  if (!Object.hasOwn(WELL_KNOWN_PROVIDERS, id)) return null;
  return buildProvider(id, {});
}

function parseProviderSection(raw: unknown): Map<string, ProviderConfig> {
  const providers = new Map<string, ProviderConfig>();
  if (raw === undefined || raw === null) return providers;
  if (!isPlainObject(raw)) throw ConfigError.badValue('providers', 'mapping of provider id → provider settings', raw);
  for (const [id, value] of Object.entries(raw)) {
    validateProviderId(id);
    const prefix = `providers.${id}`;
    if (value !== null && value !== undefined && !isPlainObject(value)) {
      throw ConfigError.badValue(prefix, 'mapping (or empty, for the defaults of a well-known provider)', value);
    }
    providers.set(id, buildProvider(id, validateProviderFields(prefix, value ?? {})));
  }
  return providers;
}

// ---------------------------------------------------------------------------------------------------------------
// Which provider serves a model (SPEC §2.3 `auto`).

function byKind(providers: ReadonlyMap<string, ProviderConfig>, kind: ProviderKind): string | null {
  for (const provider of providers.values()) if (provider.kind === kind) return provider.id;
  return null;
}

/** Family rule: bare `claude-*` → a native Anthropic provider; `gpt-*`/`o<n>*` → `openai`; `vendor/model` → `openrouter`. */
function providerByModelFamily(model: string, providers: ReadonlyMap<string, ProviderConfig>): string | null {
  const lower = model.toLowerCase();
  if (lower.includes('/')) return providers.has('openrouter') ? 'openrouter' : null;
  if (lower.startsWith('claude')) return byKind(providers, 'anthropic');
  if (/^(gpt-|o\d|chatgpt-)/.test(lower)) return providers.has('openai') ? 'openai' : null;
  return null;
}

/**
 * The provider that serves `model` (SPEC §2.3 `auto`): the first provider whose `models` list names it
 * (case-insensitive), else the model-family rule, else `fallback` (the main provider). Null when none applies.
 */
export function providerServingModel(
  model: string,
  providers: ReadonlyMap<string, ProviderConfig>,
  fallback: string | null,
): string | null {
  const lower = model.toLowerCase();
  for (const provider of providers.values()) {
    if (provider.models.some((m) => m.toLowerCase() === lower)) return provider.id;
  }
  return providerByModelFamily(model, providers) ?? fallback;
}

// ---------------------------------------------------------------------------------------------------------------
// `model.default` / `model.provider`.

const MODEL_DEFAULT_RULE: FieldRule<string | null> = {
  allowed: 'null or non-empty string',
  schema: z.string().min(1).nullable(),
};
const PROVIDER_REF_RULE: FieldRule<string | null> = {
  allowed: 'null or non-empty string',
  schema: z.string().min(1).nullable(),
};

function configuredIds(providers: ReadonlyMap<string, ProviderConfig>): string {
  return providers.size === 0 ? 'none configured' : [...providers.keys()].join(', ');
}

/** A referenced provider id must be listed, or be well-known (then it is added with its defaults). */
function requireProvider(key: string, id: string, providers: Map<string, ProviderConfig>): void {
  if (providers.has(id)) return;
  const implied = defaultProvider(id);
  if (implied) {
    providers.set(id, implied);
    return;
  }
  throw ConfigError.badValue(key, `a provider id configured under providers (${configuredIds(providers)})`, id);
}

function parseMain(raw: PlainObject, providers: Map<string, ProviderConfig>): MainModelConfig {
  const section = isPlainObject(raw.model) ? raw.model : {};
  const model =
    section.default === undefined ? null : validateField('model.default', MODEL_DEFAULT_RULE, section.default);
  const explicit =
    section.provider === undefined ? null : validateField('model.provider', PROVIDER_REF_RULE, section.provider);
  if (explicit !== null) {
    requireProvider('model.provider', explicit, providers);
    return { model, provider: explicit };
  }
  const onlyOne = providers.size === 1 ? ([...providers.keys()][0] ?? null) : null;
  if (model === null) return { model, provider: onlyOne };
  const served = providerServingModel(model, providers, onlyOne);
  if (served === null && providers.size > 1) {
    throw ConfigError.badValue(
      'model.provider',
      `a provider id configured under providers (${configuredIds(providers)}); required when several providers are configured and none is known to serve '${model}'`,
      null,
    );
  }
  return { model, provider: served };
}

/** `auxiliary.compression.provider` naming a well-known id adds that provider too (SPEC §2.3). */
function addAuxiliaryProvider(raw: PlainObject, providers: Map<string, ProviderConfig>): void {
  const auxiliary = isPlainObject(raw.auxiliary) ? raw.auxiliary : {};
  const compression = isPlainObject(auxiliary.compression) ? auxiliary.compression : {};
  const id = compression.provider;
  if (typeof id !== 'string' || RESERVED_IDS.has(id) || providers.has(id)) return;
  const implied = defaultProvider(id);
  if (implied) providers.set(id, implied);
}

/**
 * Validates `providers:` and `model.default` / `model.provider` of the raw config.yaml (LoadedConfig.raw).
 * Throws `ConfigError` naming the first offending key.
 */
export function parseProvidersConfig(raw: Record<string, unknown> | null | undefined): ProvidersConfig {
  const root: PlainObject = isPlainObject(raw) ? raw : {};
  const providers = parseProviderSection(root.providers);
  const main = parseMain(root, providers);
  addAuxiliaryProvider(root, providers);
  return { providers, main };
}

/** A configured provider by id; a well-known id that is not listed gets its defaults; null otherwise. */
export function providerById(config: ProvidersConfig, id: string | null): ProviderConfig | null {
  if (id === null) return null;
  return config.providers.get(id) ?? defaultProvider(id);
}

/** The provider the agent turn of a conversation uses: its own, else `model.provider` of config.yaml. */
export function chatProviderOf(
  config: ProvidersConfig | null,
  conversationProvider: string | null,
): ProviderConfig | null {
  const id = conversationProvider ?? config?.main.provider ?? null;
  return id === null || !config ? null : (config.providers.get(id) ?? null);
}

/**
 * The caching route of the provider a conversation's context goes to (SPEC §12.1): the configured provider's, else
 * the well-known provider's of that id (so `anthropic` and `openrouter` cache without a providers: section), else
 * none.
 */
export function cachingRouteFor(config: ProvidersConfig | null, conversationProvider: string | null): CachingRoute {
  const configured = chatProviderOf(config, conversationProvider);
  if (configured) return configured.cachingRoute;
  const id = conversationProvider ?? config?.main.provider ?? null;
  return id === null ? null : (defaultProvider(id)?.cachingRoute ?? null);
}

/**
 * Why the agent turn (chat backend mode) cannot run for a conversation — no provider configured, or its API key is
 * not set — or null. The gateway refuses such a request before storing anything; the respond activity checks the
 * same rule (issue #9 §7).
 */
export function chatProviderProblem(
  config: ProvidersConfig | null,
  conversationProvider: string | null,
  env: Readonly<Record<string, string | undefined>>,
): string | null {
  const id = conversationProvider ?? config?.main.provider ?? null;
  const provider = chatProviderOf(config, conversationProvider);
  if (!provider) {
    return id
      ? `provider '${id}' is not configured (config.yaml providers.${id})`
      : 'no LLM provider is configured for this conversation (config.yaml providers / model.provider)';
  }
  try {
    providerApiKey(provider, env);
  } catch (err) {
    if (err instanceof ProviderKeyMissingError) return err.message;
    throw err;
  }
  return null;
}
