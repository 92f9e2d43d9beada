// Builders for the llm tests: provider configurations pointing at the fake servers, and failure assertions.
import { expect } from 'vitest';
import { createProviderClient, type ProviderClient } from '../../../infra/llm/clients.js';
import { LlmFailure } from '../../../infra/llm/errors.js';
import type { CachingRoute, ProviderConfig, ProviderKind } from '../../../infra/llm/providers.js';
import type { ChatResult } from '../../../infra/llm/types.js';
import { reply } from '../../support/fakes/script.js';

export const TEST_KEY = 'sk-test-key';

export function providerConfig(
  id: string,
  kind: ProviderKind,
  baseUrl: string,
  extra: Partial<ProviderConfig> = {},
): ProviderConfig {
  const cachingRoute: CachingRoute = kind === 'anthropic' ? 'anthropic' : id === 'openrouter' ? 'openrouter' : null;
  return {
    id,
    kind,
    api: 'chat_completions',
    baseUrl,
    apiKeyEnv: 'TEST_LLM_KEY',
    headers: {},
    models: [],
    cachingRoute,
    ...extra,
  };
}

export function clientFor(
  id: string,
  kind: ProviderKind,
  baseUrl: string,
  options: { timeoutMs?: number; extra?: Partial<ProviderConfig> } = {},
): ProviderClient {
  return createProviderClient(providerConfig(id, kind, baseUrl, options.extra), {
    env: { TEST_LLM_KEY: TEST_KEY },
    timeoutMs: options.timeoutMs ?? 5_000,
  });
}

/** Awaits a rejection and returns it as an LlmFailure (failing the test otherwise). */
export async function failureOf(promise: Promise<unknown>): Promise<LlmFailure> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(LlmFailure);
    return err as LlmFailure;
  }
  throw new Error('expected a rejection');
}

/** Number of cache_control markers anywhere in a JSON value. */
export function markerCount(value: unknown): number {
  return JSON.stringify(value).split('"cache_control"').length - 1;
}

/** A fetch that records the body each request hands it, then sends the request (an SDK's `fetch` option). */
export function recordingFetch(bodies: unknown[]): typeof fetch {
  return (url, init) => {
    bodies.push(init?.body);
    return fetch(url, init);
  };
}

/** Two calls: one plain, answered 'one', then one streamed, answered 'two words' and heard in pieces. */
export async function plainThenStreamed(
  fake: { enqueue(response: ReturnType<typeof reply>): void },
  call: (onText?: (delta: string) => void) => Promise<ChatResult>,
): Promise<void> {
  fake.enqueue(reply('one'));
  expect((await call()).message.content).toBe('one');
  fake.enqueue(reply('two words'));
  const pieces: string[] = [];
  expect((await call((delta) => pieces.push(delta))).message.content).toBe('two words');
  expect(pieces.join('')).toBe('two words');
}
