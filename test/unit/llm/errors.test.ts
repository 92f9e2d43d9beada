// Provider errors → LlmFailure (SPEC §9.2), through the real SDKs against both fakes; the activity guard's
// conversion to a Temporal ApplicationFailure keeps type, retryability, delay and details.
import { createServer } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityFailure } from '../../../activities/guard.js';
import type { ChatMessage } from '../../../engine/types.js';
import { chatCompletion } from '../../../infra/llm/chat.js';
import { createProviderClient } from '../../../infra/llm/clients.js';
import { classifyProviderError, LlmFailure, LlmFailureType, retryAfterMs } from '../../../infra/llm/errors.js';
import type { ProviderKind } from '../../../infra/llm/providers.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import type { FakeServer } from '../../support/fakes/fakeServer.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import {
  contextTooLong,
  type FakeStep,
  hang,
  httpError,
  rateLimited,
  serverError,
  unauthorized,
} from '../../support/fakes/script.js';
import { clientFor, failureOf, providerConfig } from './helpers.js';

let openai: OpenAIFake;
let anthropic: AnthropicFake;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close()]);
});

const messages: ChatMessage[] = [{ role: 'user', content: 'hello' }];

interface Target {
  kind: ProviderKind;
  fake: () => FakeServer & { baseURL: string };
  model: string;
}
const TARGETS: Target[] = [
  { kind: 'openai', fake: () => openai, model: 'gpt-5.5' },
  { kind: 'anthropic', fake: () => anthropic, model: 'claude-opus-5-5' },
];

async function failWith(target: Target, step: FakeStep, timeoutMs = 5_000): Promise<LlmFailure> {
  const fake = target.fake();
  fake.enqueue(step);
  const provider = clientFor(target.kind, target.kind, fake.baseURL, { timeoutMs });
  return failureOf(chatCompletion({ provider, model: target.model, messages, cache: null }));
}

describe.each(TARGETS)('$kind: HTTP errors', (target) => {
  it.each([
    [httpError(400, 'messages.0: bad'), LlmFailureType.BadRequest],
    [unauthorized(), LlmFailureType.AuthError],
    [httpError(402, 'Your credit balance is too low'), LlmFailureType.QuotaExceeded],
    [httpError(403, 'forbidden'), LlmFailureType.PermissionDenied],
    [httpError(404, 'model: no-such-model'), LlmFailureType.NotFound],
    [contextTooLong(), LlmFailureType.ContextTooLong],
    [httpError(413, 'Request exceeds the maximum allowed number of bytes'), LlmFailureType.ContextTooLong],
    [
      httpError(400, 'input length and `max_tokens` exceed context limit: 190000 + 24000 > 200000'),
      LlmFailureType.ContextTooLong,
    ],
    [httpError(422, 'unprocessable'), LlmFailureType.BadRequest],
  ])('%j → non-retryable %s', async (step, type) => {
    const failure = await failWith(target, step);
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.nextRetryDelay).toBeUndefined();
  });

  it.each([
    [serverError(500), LlmFailureType.Unavailable],
    [serverError(502), LlmFailureType.Unavailable],
    [serverError(529), LlmFailureType.Unavailable],
    [httpError(408, 'timeout'), LlmFailureType.Timeout],
  ])('%j → retryable %s', async (step, type) => {
    const failure = await failWith(target, step);
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(false);
  });

  it('429 → retryable, nextRetryDelay from retry-after (seconds)', async () => {
    const failure = await failWith(target, rateLimited({ 'retry-after': '7' }));
    expect(failure.type).toBe(LlmFailureType.RateLimited);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(7_000);
  });

  it('429 → retry-after-ms wins over retry-after', async () => {
    const failure = await failWith(target, rateLimited({ 'retry-after-ms': '1500', 'retry-after': '9' }));
    expect(failure.nextRetryDelay).toBe(1_500);
  });

  it('429 without a hint → no nextRetryDelay (the retry policy decides)', async () => {
    const failure = await failWith(target, rateLimited({}));
    expect(failure.type).toBe(LlmFailureType.RateLimited);
    expect(failure.nextRetryDelay).toBeUndefined();
  });

  it('503 honours retry-after too', async () => {
    const failure = await failWith(target, { ...serverError(503), headers: { 'retry-after': '3' } });
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(3_000);
  });

  it('names provider, model, status and error type, never the provider error body', async () => {
    const failure = await failWith(target, httpError(400, 'SECRET-BODY-TEXT with prompt excerpt'));
    expect(failure.message).toContain(target.kind);
    expect(failure.message).toContain(target.model);
    expect(failure.message).toContain('HTTP 400');
    expect(failure.message).not.toContain('SECRET-BODY-TEXT');
    expect(JSON.stringify(failure.details)).not.toContain('SECRET-BODY-TEXT');
    expect(failure.details).toMatchObject({ provider: target.kind, model: target.model, status: 400 });
  });

  it('a hanging server → retryable ProviderTimeout, fired by the client timeout', async () => {
    const started = Date.now();
    const failure = await failWith(target, hang(), 300);
    expect(failure.type).toBe(LlmFailureType.Timeout);
    expect(failure.nonRetryable).toBe(false);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('an aborted request → retryable ProviderRequestAborted', async () => {
    const fake = target.fake();
    fake.enqueue(hang());
    const controller = new AbortController();
    const provider = clientFor(target.kind, target.kind, fake.baseURL);
    const pending = chatCompletion({ provider, model: target.model, messages, cache: null, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const failure = await failureOf(pending);
    expect(failure.type).toBe(LlmFailureType.Aborted);
    expect(failure.nonRetryable).toBe(false);
  });

  it('a refused connection → retryable ProviderConnectionError', async () => {
    const port = await closedPort();
    const provider = clientFor(
      target.kind,
      target.kind,
      `http://127.0.0.1:${port}${target.kind === 'openai' ? '/v1' : ''}`,
    );
    const failure = await failureOf(chatCompletion({ provider, model: target.model, messages, cache: null }));
    expect(failure.type).toBe(LlmFailureType.Connection);
    expect(failure.nonRetryable).toBe(false);
  });
});

describe('OpenAI specifics', () => {
  it('429 insufficient_quota is a quota error, not a rate limit (non-retryable)', async () => {
    openai.enqueue(
      httpError(429, 'You exceeded your current quota', { type: 'insufficient_quota', code: 'insufficient_quota' }),
    );
    const failure = await failureOf(
      chatCompletion({
        provider: clientFor('openai', 'openai', openai.baseURL),
        model: 'gpt-5.5',
        messages,
        cache: null,
      }),
    );
    expect(failure.type).toBe(LlmFailureType.QuotaExceeded);
    expect(failure.nonRetryable).toBe(true);
  });

  it('a 200 without choices (OpenRouter upstream error) is retryable', async () => {
    openai.enqueue({ kind: 'raw', status: 200, body: { id: 'x', object: 'chat.completion', choices: [] } });
    const failure = await failureOf(
      chatCompletion({
        provider: clientFor('openrouter', 'openai', openai.baseURL),
        model: 'x/y',
        messages,
        cache: null,
      }),
    );
    expect(failure.type).toBe(LlmFailureType.Unavailable);
    expect(failure.nonRetryable).toBe(false);
  });
});

describe('local failures', () => {
  it('a missing API key is a non-retryable ProviderConfigError naming the variable', () => {
    let thrown: unknown;
    try {
      createProviderClient(providerConfig('openai', 'openai', openai.baseURL, { apiKeyEnv: 'NOPE_KEY' }), {
        env: {},
        timeoutMs: 1_000,
      });
    } catch (err) {
      thrown = err;
    }
    const failure = classifyProviderError(thrown, { provider: 'openai', model: 'gpt-5.5' });
    expect(failure.type).toBe(LlmFailureType.ConfigError);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('NOPE_KEY');
  });

  it('a -900k model without that variant is rejected before sending (SPEC §4.3)', async () => {
    const before = openai.requests.length;
    const failure = await failureOf(
      chatCompletion({
        provider: clientFor('openai', 'openai', openai.baseURL),
        model: 'gpt-5.5-900k',
        messages,
        cache: null,
      }),
    );
    expect(failure.type).toBe(LlmFailureType.ModelNotAvailable);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe("Model 'gpt-5.5-900k' is not available: 'gpt-5.5' has no -900k variant.");
    expect(openai.requests.length).toBe(before);
  });

  it('an LlmFailure passes through unchanged; anything else is a retryable ProviderError', () => {
    const original = new LlmFailure(
      LlmFailureType.AuthError,
      'x',
      { provider: 'p', model: 'm', status: 401, requestId: null },
      { nonRetryable: true },
    );
    expect(classifyProviderError(original, { provider: 'p', model: 'm' })).toBe(original);
    const other = classifyProviderError(new TypeError('boom'), { provider: 'p', model: 'm' });
    expect(other.type).toBe(LlmFailureType.Unknown);
    expect(other.nonRetryable).toBe(false);
  });
});

describe('retryAfterMs', () => {
  const headers = (init: Record<string, string>) => new Headers(init);
  it('reads milliseconds, seconds and HTTP dates', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250.4' }))).toBe(251);
    expect(retryAfterMs(headers({ 'retry-after': '2.5' }))).toBe(2_500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }), () => now)).toBe(30_000);
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }))).toBeNull();
    expect(retryAfterMs(headers({}))).toBeNull();
    expect(retryAfterMs(undefined)).toBeNull();
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the activity guard hands an LlmFailure to Temporal', () => {
  it('as an ApplicationFailure with the same type, retryability, retry delay and details', () => {
    const details = { provider: 'openai', model: 'gpt-5.5', status: 429, requestId: 'req-1' };
    const limited = new LlmFailure(LlmFailureType.RateLimited, 'rate limited', details, {
      nonRetryable: false,
      nextRetryDelayMs: 1_500,
    });
    const converted = activityFailure(limited) as ApplicationFailure;
    expect(converted).toBeInstanceOf(ApplicationFailure);
    expect(converted).toMatchObject({ type: 'ProviderRateLimited', nonRetryable: false, message: 'rate limited' });
    expect(converted.nextRetryDelay).toBe(1_500);
    expect(converted.details).toEqual([details]);
    const auth = activityFailure(
      new LlmFailure(LlmFailureType.AuthError, 'no', { ...details, status: 401 }, { nonRetryable: true }),
    ) as ApplicationFailure;
    expect(auth.nonRetryable).toBe(true);
    expect(auth.nextRetryDelay).toBeUndefined();
  });
});
