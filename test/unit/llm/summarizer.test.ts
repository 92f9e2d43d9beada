// The host summarizer (SPEC §2.3, §9.2): resolution of model / provider / endpoint / timeout, and end-to-end calls
// through the real SDKs against both fakes, including the one-time fallback to the main model.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../engine/config.js';
import type { SummaryRequest } from '../../../engine/types.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { LlmFailureType } from '../../../infra/llm/errors.js';
import {
  anthropicSummaryMaxTokens,
  CUSTOM_ENDPOINT_ID,
  createSummarizer,
  resolveSummarizerPlan,
} from '../../../infra/llm/summarizer.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import {
  contextTooLong,
  emptyReply,
  hang,
  httpError,
  rateLimited,
  refusalReply,
  reply,
  serverError,
  truncatedReply,
} from '../../support/fakes/script.js';
import { failureOf } from './helpers.js';

const ENV = { OPENAI_KEY: 'sk-openai', ANTHROPIC_KEY: 'sk-ant', ROUTER_KEY: 'sk-or' };
const SUMMARY = '## Goal\nShip the release.\n## Progress\n### Done\n- tagged v1.2';

const request: SummaryRequest = {
  prompt: 'TURNS TO SUMMARIZE:\n[USER]: ship it',
  budgetTokens: 3_000,
  previousSummary: null,
  turnCount: 1,
};

let openai: OpenAIFake;
let anthropic: AnthropicFake;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([
    startOpenAIFake({ expectedApiKey: ENV.OPENAI_KEY }),
    startAnthropicFake({ expectedApiKey: ENV.ANTHROPIC_KEY }),
  ]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.requests.length = 0;
  anthropic.requests.length = 0;
});

/** config.yaml with both fakes as providers; `extra` is appended (auxiliary / compression sections). */
function config(extra = '', main = 'model:\n  default: gpt-5.5\n  provider: openai\n') {
  return parseConfigText(
    [
      main,
      'providers:',
      '  openai:',
      `    base_url: ${openai.baseURL}`,
      '    api_key_env: OPENAI_KEY',
      '  anthropic:',
      `    base_url: ${anthropic.baseURL}`,
      '    api_key_env: ANTHROPIC_KEY',
      extra,
    ].join('\n'),
  );
}

describe('resolveSummarizerPlan (SPEC §2.3)', () => {
  it('no provider configured → null (compaction uses the fallback summary)', () => {
    expect(resolveSummarizerPlan({ config: parseConfigText('') })).toBeNull();
    expect(createSummarizer({ config: parseConfigText('model:\n  default: gpt-5.5\n') })).toBeNull();
    expect(
      createSummarizer({ config: parseConfigText('auxiliary:\n  compression:\n    model: claude-x\n') }),
    ).toBeNull();
  });

  it('defaults: the main model on the main provider, summary_timeout_seconds, no fallback', () => {
    const plan = resolveSummarizerPlan({ config: config() });
    expect(plan?.primary.model).toBe('gpt-5.5');
    expect(plan?.primary.provider.id).toBe('openai');
    expect(plan?.fallback).toBeNull();
    expect(plan?.timeoutSeconds).toBe(120);
    expect(
      resolveSummarizerPlan({ config: config('compression:\n  summary_timeout_seconds: 30') })?.timeoutSeconds,
    ).toBe(30);
  });

  it('auxiliary.compression.timeout wins over summary_timeout_seconds', () => {
    const cfg = config('compression:\n  summary_timeout_seconds: 30\nauxiliary:\n  compression:\n    timeout: 12.5');
    expect(resolveSummarizerPlan({ config: cfg })?.timeoutSeconds).toBe(12.5);
  });

  it('auto: the provider serving the summary model; the main model is the fallback', () => {
    const plan = resolveSummarizerPlan({ config: config('auxiliary:\n  compression:\n    model: claude-haiku-5') });
    expect(plan?.primary.provider.id).toBe('anthropic');
    expect(plan?.primary.model).toBe('claude-haiku-5');
    expect(plan?.fallback?.provider.id).toBe('openai');
    expect(plan?.fallback?.model).toBe('gpt-5.5');
  });

  it('auto with an unknown model family: the main provider', () => {
    const plan = resolveSummarizerPlan({ config: config('auxiliary:\n  compression:\n    model: qwen3-32b') });
    expect(plan?.primary.provider.id).toBe('openai');
  });

  it('main: the main provider, even for a model another provider would serve', () => {
    const cfg = config('auxiliary:\n  compression:\n    model: claude-haiku-5\n    provider: main');
    expect(resolveSummarizerPlan({ config: cfg })?.primary.provider.id).toBe('openai');
  });

  it('an explicit provider id; a well-known one is configured implicitly', () => {
    const cfg = config('auxiliary:\n  compression:\n    model: gpt-5.4-mini\n    provider: anthropic');
    expect(resolveSummarizerPlan({ config: cfg })?.primary.provider.id).toBe('anthropic');
    const router = config('auxiliary:\n  compression:\n    model: google/gemini-3-flash\n    provider: openrouter');
    expect(resolveSummarizerPlan({ config: router })?.primary.provider).toMatchObject({
      id: 'openrouter',
      baseUrl: 'https://openrouter.ai/api/v1',
      apiKeyEnv: 'OPENROUTER_API_KEY',
    });
  });

  it('an unknown provider id fails start-up naming the key', () => {
    const cfg = config('auxiliary:\n  compression:\n    provider: nowhere');
    expect(() => resolveSummarizerPlan({ config: cfg })).toThrow(ConfigError);
    expect(() => resolveSummarizerPlan({ config: cfg })).toThrow(
      'Invalid configuration: auxiliary.compression.provider: expected "auto", "main" or a configured provider id (openai, anthropic), got "nowhere"',
    );
  });

  it('base_url: an OpenAI-compatible endpoint, keyless unless a provider is named explicitly', () => {
    const keyless = resolveSummarizerPlan({
      config: config('auxiliary:\n  compression:\n    model: llama3\n    base_url: http://127.0.0.1:11434/v1/'),
    });
    expect(keyless?.primary.provider).toMatchObject({
      id: CUSTOM_ENDPOINT_ID,
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKeyEnv: null,
    });
    expect(keyless?.fallback?.model).toBe('gpt-5.5');
    const keyed = resolveSummarizerPlan({
      config: config('auxiliary:\n  compression:\n    provider: anthropic\n    base_url: http://gw.local/v1'),
    });
    expect(keyed?.primary.provider).toMatchObject({ id: 'anthropic', kind: 'openai', apiKeyEnv: 'ANTHROPIC_KEY' });
    // The main model, but on another endpoint: distinct, so the main model on its own provider is the fallback.
    expect(keyed?.primary.model).toBe('gpt-5.5');
    expect(keyed?.fallback?.provider.baseUrl).toBe(openai.baseURL);
  });

  it('base_url works without any providers section', () => {
    const cfg = parseConfigText('auxiliary:\n  compression:\n    model: llama3\n    base_url: http://127.0.0.1:9/v1\n');
    const plan = resolveSummarizerPlan({ config: cfg });
    expect(plan?.primary).toMatchObject({ model: 'llama3', provider: { id: CUSTOM_ENDPOINT_ID } });
    expect(plan?.fallback).toBeNull();
  });

  it('the session main model and provider override model.default / model.provider', () => {
    const plan = resolveSummarizerPlan({ config: config(), mainModel: 'claude-opus-5-5', mainProvider: 'anthropic' });
    expect(plan?.primary).toMatchObject({ model: 'claude-opus-5-5', provider: { id: 'anthropic' } });
  });
});

describe('anthropicSummaryMaxTokens (SPEC §9.2: never below 2 × budget)', () => {
  it.each([
    [1_000, 4_096],
    [2_000, 4_096],
    [3_000, 6_000],
    [12_000, 24_000],
    [20_000, 40_000],
  ])('budget %i → %i', (budget, expected) => {
    expect(anthropicSummaryMaxTokens(budget)).toBe(expected);
    expect(anthropicSummaryMaxTokens(budget)).toBeGreaterThanOrEqual(2 * budget);
  });
});

describe('summarizer end to end', () => {
  function summarizer(extra = '', main?: string, log: (m: string) => void = () => {}) {
    const s = createSummarizer({ config: config(extra, main), env: ENV, log });
    if (!s) throw new Error('expected a summarizer');
    return s;
  }

  it('OpenAI: one user message with the prompt, no output limit, the reply text back', async () => {
    openai.enqueue(reply(SUMMARY));
    await expect(summarizer()(request)).resolves.toBe(SUMMARY);
    const body = openai.chatRequests()[0]?.body;
    expect(body.messages).toEqual([{ role: 'user', content: request.prompt }]);
    expect(body.model).toBe('gpt-5.5');
    expect(body.max_tokens).toBeUndefined();
    expect(body.max_completion_tokens).toBeUndefined();
  });

  it('Anthropic: max_tokens = max(2 × budget, 4096), no system, no cache markers', async () => {
    anthropic.enqueue(reply(SUMMARY));
    const s = summarizer(
      'prompt_caching:\n  cache_ttl: 1h',
      'model:\n  default: claude-opus-5-5\n  provider: anthropic\n',
    );
    await expect(s(request)).resolves.toBe(SUMMARY);
    const body = anthropic.messageRequests()[0]?.body;
    expect(body.max_tokens).toBe(6_000);
    expect(body.system).toBeUndefined();
    expect(body.messages).toEqual([{ role: 'user', content: request.prompt }]);
  });

  it.each([
    ['refusal', LlmFailureType.SummaryRefused, refusalReply()],
    ['truncation', LlmFailureType.SummaryTruncated, truncatedReply()],
    ['empty reply', LlmFailureType.EmptySummary, emptyReply()],
    ['blank reply', LlmFailureType.EmptySummary, reply('  \n ')],
  ])('OpenAI %s → non-retryable %s, nothing returned', async (_name, type, step) => {
    openai.enqueue(step);
    const failure = await failureOf(summarizer()(request));
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(true);
  });

  it.each([
    ['refusal', LlmFailureType.SummaryRefused, refusalReply()],
    ['truncation', LlmFailureType.SummaryTruncated, truncatedReply()],
    ['empty reply', LlmFailureType.EmptySummary, emptyReply()],
  ])('Anthropic %s → non-retryable %s', async (_name, type, step) => {
    anthropic.enqueue(step);
    const s = summarizer('', 'model:\n  default: claude-opus-5-5\n  provider: anthropic\n');
    const failure = await failureOf(s(request));
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(true);
  });

  it('a transient error rejects retryable (the activity retry policy retries) and never falls back', async () => {
    const logs: string[] = [];
    anthropic.enqueue(rateLimited({ 'retry-after': '4' }));
    const s = summarizer('auxiliary:\n  compression:\n    model: claude-haiku-5', undefined, (m) => logs.push(m));
    const failure = await failureOf(s(request));
    expect(failure.type).toBe(LlmFailureType.RateLimited);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(4_000);
    expect(openai.requests).toHaveLength(0);
    expect(logs).toEqual([]);
  });

  it('a distinct summary model failing permanently falls back to the main model once, and says so', async () => {
    const logs: string[] = [];
    anthropic.enqueue(httpError(404, 'model: claude-haiku-5 not found'));
    openai.enqueue(reply(SUMMARY));
    const s = summarizer('auxiliary:\n  compression:\n    model: claude-haiku-5', undefined, (m) => logs.push(m));
    await expect(s(request)).resolves.toBe(SUMMARY);
    expect(anthropic.messageRequests()).toHaveLength(1);
    expect(anthropic.messageRequests()[0]?.body.model).toBe('claude-haiku-5');
    expect(openai.chatRequests()).toHaveLength(1);
    expect(openai.chatRequests()[0]?.body.model).toBe('gpt-5.5');
    expect(logs).toEqual([
      "Summary model 'claude-haiku-5' on provider 'anthropic' failed (ProviderNotFound); falling back to the main model 'gpt-5.5' on provider 'openai' for this summary.",
    ]);
  });

  it('falls back on refusals and context-too-long too; when the main model fails as well, its failure rejects', async () => {
    anthropic.enqueue(contextTooLong());
    openai.enqueue(serverError(500));
    const s = summarizer('auxiliary:\n  compression:\n    model: claude-haiku-5');
    const failure = await failureOf(s(request));
    expect(failure.type).toBe(LlmFailureType.Unavailable);
    expect(failure.nonRetryable).toBe(false);
    expect(anthropic.messageRequests()).toHaveLength(1);
    expect(openai.chatRequests()).toHaveLength(1);

    anthropic.enqueue(refusalReply());
    openai.enqueue(reply(SUMMARY));
    await expect(s(request)).resolves.toBe(SUMMARY);
  });

  it('a missing key for the summary provider is permanent: falls back to the main model', async () => {
    const logs: string[] = [];
    openai.enqueue(reply(SUMMARY));
    const s = createSummarizer({
      config: config('auxiliary:\n  compression:\n    model: claude-haiku-5'),
      env: { OPENAI_KEY: ENV.OPENAI_KEY },
      log: (m) => logs.push(m),
    });
    await expect(s?.(request)).resolves.toBe(SUMMARY);
    expect(anthropic.requests).toHaveLength(0);
    expect(logs[0]).toContain('(ProviderConfigError)');
  });

  it('the main model itself failing permanently rejects at once (no second call)', async () => {
    openai.enqueue(httpError(401, 'bad key'));
    const failure = await failureOf(summarizer()(request));
    expect(failure.type).toBe(LlmFailureType.AuthError);
    expect(failure.nonRetryable).toBe(true);
    expect(openai.chatRequests()).toHaveLength(1);
  });

  it('each attempt is bounded by auxiliary.compression.timeout', async () => {
    openai.enqueue(hang());
    const s = summarizer('auxiliary:\n  compression:\n    timeout: 0.3');
    const started = Date.now();
    const failure = await failureOf(s(request));
    expect(failure.type).toBe(LlmFailureType.Timeout);
    expect(failure.nonRetryable).toBe(false);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("stops a call when the request's signal aborts (a cancelled activity), and then tries no fallback", async () => {
    anthropic.enqueue(hang());
    openai.enqueue(reply(SUMMARY));
    const s = summarizer('auxiliary:\n  compression:\n    model: claude-haiku-5');
    const controller = new AbortController();
    const pending = failureOf(s({ ...request, signal: controller.signal }));
    await vi.waitFor(() => expect(anthropic.messageRequests()).toHaveLength(1));
    controller.abort();
    const failure = await pending;
    expect(failure.type).toBe(LlmFailureType.Aborted);
    expect(failure.nonRetryable).toBe(false);
    expect(openai.chatRequests()).toHaveLength(0);
  });

  it('base_url: the summary goes to the custom endpoint without a key', async () => {
    const bare = await startOpenAIFake();
    try {
      bare.enqueue(reply('## Goal\nfrom the local model'));
      const s = summarizer(`auxiliary:\n  compression:\n    model: llama3\n    base_url: ${bare.baseURL}`);
      await expect(s(request)).resolves.toBe('## Goal\nfrom the local model');
      expect(bare.chatRequests()[0]?.body.model).toBe('llama3');
      expect(bare.chatRequests()[0]?.headers.authorization).toBe('Bearer no-key');
      expect(openai.chatRequests()).toHaveLength(0);
    } finally {
      await bare.close();
    }
  });
});
