// What both drop-in dialects (issue #12) do the same way before they call a provider: check that the store can keep
// the history (400 naming the field, nothing stored), find the configured provider of the requested model and its
// kind, and keep one SDK client per provider.
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { MAX_BATCH_MESSAGES, validateSubmit } from '../../../contracts/validation.js';
import type { CacheTtl } from '../../../engine/index.js';
import type { ReplayOrigin } from '../../../engine/nativeCompaction.js';
import type { ChatMessage } from '../../../engine/types.js';
import { createAnthropicClient, createOpenAIClient, providerAccount } from '../../../infra/llm/clients.js';
import { providerApiKey } from '../../../infra/llm/providerKeys.js';
import {
  type ProviderConfig,
  type ProviderKind,
  type ProvidersConfig,
  providerById,
  providerServingModel,
} from '../../../infra/llm/providers.js';
import type { Conversations } from '../conversations.js';
import { ChatUnavailableError } from '../errors.js';
import { DropinRequestError } from './conversationFlow.js';

/**
 * Refuses a history the store could not keep: the store's message (`messages[i].message.role …`) with the path
 * `rename` gives it in the dialect, and that path as the field named.
 */
export function checkStorable(history: readonly ChatMessage[], rename: (problem: string, offset: number) => string) {
  for (let i = 0; i < history.length; i += MAX_BATCH_MESSAGES) {
    const slice = history.slice(i, i + MAX_BATCH_MESSAGES);
    const problem = validateSubmit({ messages: slice.map((message, j) => ({ message, idempotencyKey: `k${j}` })) });
    if (problem) {
      const named = rename(problem, i);
      throw new DropinRequestError(named, /^messages(\[\d+\])?[.\w]*/.exec(named)?.[0] ?? 'messages');
    }
  }
}

export interface UpstreamDeps {
  providers: ProvidersConfig | null;
  env?: Readonly<Record<string, string | undefined>>;
  /** Per-request timeout of the provider, ms (default 300 s). */
  timeoutMs?: number;
}

/** What a dialect's service needs. */
export interface DropinDeps extends UpstreamDeps {
  conversations: Conversations;
  cacheTtl: CacheTtl | null;
}

type ClientOf<K extends ProviderKind> = K extends 'openai' ? OpenAI : Anthropic;

/** The providers of one kind, as a dialect reaches them. */
export class Upstreams<K extends ProviderKind> {
  private readonly clients = new Map<string, ClientOf<K>>();

  constructor(
    private readonly deps: UpstreamDeps,
    private readonly kind: K,
    /** What the dialect's endpoint is called, for the refusal of a model another kind serves. */
    private readonly endpoint: string,
  ) {}

  /** The configured provider of `model` (SPEC §2.3 resolution); 400 naming `model` when it is not of this kind. */
  providerFor(model: string): ProviderConfig {
    const config = this.deps.providers;
    const id = config ? providerServingModel(model, config.providers, config.main.provider) : null;
    const provider = config && id ? providerById(config, id) : null;
    if (!provider) throw new DropinRequestError(`no configured provider serves the model '${model}'`, 'model');
    if (provider.kind !== this.kind) {
      throw new DropinRequestError(
        `the model '${model}' is served by the ${provider.kind} provider '${provider.id}'; ${this.endpoint} sends ` +
          `requests to ${this.kind} providers only`,
        'model',
      );
    }
    return provider;
  }

  /**
   * The route a request to `provider` goes to, as provider-issued items are matched against it (SPEC §15.1
   * switching): provider, base URL and account (its `account` label, else the key's fingerprint). Call after
   * `clientFor`, which refuses a provider without its key.
   */
  originOf(provider: ProviderConfig): ReplayOrigin {
    const account = providerAccount(provider, providerApiKey(provider, this.deps.env ?? process.env));
    return { provider: provider.id, baseUrl: provider.baseUrl, account };
  }

  /** The provider's client (422 when its API key is not configured); never one of a Codex app-server (SPEC §15.2). */
  clientFor(provider: ProviderConfig): ClientOf<K> {
    if (provider.api === 'codex_app_server') {
      throw new DropinRequestError(
        `the model is served by the Codex app-server provider '${provider.id}'; ${this.endpoint} cannot reach it ` +
          '(use POST /v1/chat/completions or the conversations API)',
        'model',
      );
    }
    const cached = this.clients.get(provider.id);
    if (cached) return cached;
    let apiKey: string | null;
    try {
      apiKey = providerApiKey(provider, this.deps.env ?? process.env);
    } catch (err) {
      throw new ChatUnavailableError((err as Error).message);
    }
    const settings = {
      baseUrl: provider.baseUrl,
      apiKey,
      timeoutMs: this.deps.timeoutMs ?? 300_000,
      headers: provider.headers,
    };
    const client = (
      this.kind === 'openai' ? createOpenAIClient(settings) : createAnthropicClient(settings)
    ) as ClientOf<K>;
    this.clients.set(provider.id, client);
    return client;
  }
}
