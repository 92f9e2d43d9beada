// The official SDK clients (DESIGN.md §5), built from a provider's configuration. Retries are Temporal's job
// (SPEC §9.2: at most 3 attempts under the activity's retry policy), so the SDKs' own retries are off, and every
// setting comes from config.yaml and the named key variable: the SDKs never fall back to their own environment
// variables (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OPENAI_ORG_ID, ...).
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { providerApiKey } from './providerKeys.js';
import type { CachingRoute, ProviderApi, ProviderConfig, ProviderKind } from './providers.js';

/** Sent as the key of a keyless endpoint (`api_key_env: null`), because the OpenAI SDK requires a string. */
export const KEYLESS_API_KEY = 'no-key';

interface ProviderClientBase {
  id: string;
  kind: ProviderKind;
  api: ProviderApi;
  baseUrl: string;
  /**
   * Which account the key belongs to, as far as replay needs it (SPEC §15.1 switching): the provider's `account`
   * label, else a fingerprint of the key (never the key), null for a keyless endpoint.
   */
  account: string | null;
  cachingRoute: CachingRoute;
  /** Per-request timeout of the client, milliseconds. */
  timeoutMs: number;
}
export interface OpenAIProviderClient extends ProviderClientBase {
  kind: 'openai';
  openai: OpenAI;
}
export interface AnthropicProviderClient extends ProviderClientBase {
  kind: 'anthropic';
  anthropic: Anthropic;
}
export type ProviderClient = OpenAIProviderClient | AnthropicProviderClient;

export interface ClientOptions {
  /** Environment holding the API keys (default: process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Per-request timeout, milliseconds. */
  timeoutMs: number;
}

export function createOpenAIClient(options: {
  baseUrl: string;
  apiKey: string | null;
  timeoutMs: number;
  headers?: Record<string, string>;
}): OpenAI {
  return new OpenAI({
    baseURL: options.baseUrl,
    apiKey: options.apiKey ?? KEYLESS_API_KEY,
    organization: null,
    project: null,
    timeout: options.timeoutMs,
    maxRetries: 0,
    defaultHeaders: options.headers ?? {},
  });
}

export function createAnthropicClient(options: {
  baseUrl: string;
  apiKey: string | null;
  timeoutMs: number;
  headers?: Record<string, string>;
}): Anthropic {
  return new Anthropic({
    baseURL: options.baseUrl,
    apiKey: options.apiKey ?? KEYLESS_API_KEY,
    timeout: options.timeoutMs,
    maxRetries: 0,
    defaultHeaders: options.headers ?? {},
  });
}

/** A key's fingerprint: the first 16 hex digits of its SHA-256. */
export function accountOf(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
}

/** The account a provider's requests go to (SPEC §15.1 replay origins): its `account` label, else its key's fingerprint. */
export function providerAccount(provider: Pick<ProviderConfig, 'account'>, apiKey: string | null): string | null {
  return provider.account ?? (apiKey === null ? null : accountOf(apiKey));
}

/**
 * A client for one provider. Throws `ProviderKeyMissingError` when the provider's key variable is unset, so a
 * missing key surfaces when the provider is used, not at start-up.
 */
export function createProviderClient(provider: ProviderConfig, options: ClientOptions): ProviderClient {
  const apiKey = providerApiKey(provider, options.env ?? process.env);
  const baseUrl = provider.baseUrl;
  const settings = { baseUrl, apiKey, timeoutMs: options.timeoutMs, headers: provider.headers };
  const base = {
    id: provider.id,
    api: provider.api,
    baseUrl,
    account: providerAccount(provider, apiKey),
    cachingRoute: provider.cachingRoute,
    timeoutMs: options.timeoutMs,
  };
  if (provider.kind === 'anthropic') {
    return { ...base, kind: 'anthropic', anthropic: createAnthropicClient(settings) };
  }
  return { ...base, kind: 'openai', openai: createOpenAIClient(settings) };
}

/**
 * Provider clients kept for reuse (a chat turn's model call, activities/turnRunner.ts): one per provider
 * configuration, key and timeout. Building an SDK client for every turn cost ~0.1 ms of the gateway's CPU (issue
 * #11); a key variable that changes gets a new client, as does a reloaded configuration (a new object).
 */
export class ProviderClients {
  private readonly kept = new WeakMap<ProviderConfig, Map<string, ProviderClient>>();

  get(provider: ProviderConfig, options: ClientOptions): ProviderClient {
    const apiKey = providerApiKey(provider, options.env ?? process.env);
    const key = `${options.timeoutMs}\u0000${apiKey ?? ''}`;
    let clients = this.kept.get(provider);
    if (!clients) {
      clients = new Map();
      this.kept.set(provider, clients);
    }
    let client = clients.get(key);
    if (!client) {
      // Bounded: a key that keeps changing leaves no trail of clients.
      if (clients.size >= 4) clients.clear();
      client = createProviderClient(provider, options);
      clients.set(key, client);
    }
    return client;
  }
}
