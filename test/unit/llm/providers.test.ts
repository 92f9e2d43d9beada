import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { type ProviderClient, ProviderClients } from '../../../infra/llm/clients.js';
import { ProviderKeyMissingError, providerApiKey } from '../../../infra/llm/providerKeys.js';
import { cachingRouteFor, parseProvidersConfig, providerServingModel } from '../../../infra/llm/providers.js';
import { providerConfig } from './helpers.js';

function providersOf(yaml: string) {
  return parseProvidersConfig(parseConfigText(yaml).raw);
}

const EXAMPLE = `
model:
  default: claude-sonnet-5-5
  provider: anthropic
  context_length: 200000
providers:
  openai: {}
  anthropic:
    api_key_env: MY_ANTHROPIC_KEY
  openrouter:
    headers: { X-Title: durable-context }
  local:
    kind: openai
    base_url: http://127.0.0.1:11434/v1/
    models: [llama3.1:8b]
`;

describe('providers: section', () => {
  it('reads the example with the defaults of the well-known ids', () => {
    const cfg = providersOf(EXAMPLE);
    expect(cfg.main).toEqual({ model: 'claude-sonnet-5-5', provider: 'anthropic' });
    expect([...cfg.providers.keys()]).toEqual(['openai', 'anthropic', 'openrouter', 'local']);
    expect(cfg.providers.get('openai')).toEqual({
      id: 'openai',
      kind: 'openai',
      api: 'chat_completions',
      baseUrl: 'https://api.openai.com/v1',
      apiKeyEnv: 'OPENAI_API_KEY',
      headers: {},
      models: [],
      cachingRoute: null,
    });
    expect(cfg.providers.get('anthropic')).toMatchObject({
      kind: 'anthropic',
      baseUrl: 'https://api.anthropic.com',
      apiKeyEnv: 'MY_ANTHROPIC_KEY',
      cachingRoute: 'anthropic',
    });
    expect(cfg.providers.get('openrouter')).toMatchObject({
      kind: 'openai',
      baseUrl: 'https://openrouter.ai/api/v1',
      apiKeyEnv: 'OPENROUTER_API_KEY',
      headers: { 'X-Title': 'durable-context' },
      cachingRoute: 'openrouter',
    });
    expect(cfg.providers.get('local')).toMatchObject({
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKeyEnv: null,
      models: ['llama3.1:8b'],
      cachingRoute: null,
    });
  });

  it('recognises OpenRouter by host under another id (prompt caching, SPEC §12.1)', () => {
    const cfg = providersOf('providers:\n  router:\n    base_url: https://openrouter.ai/api/v1\n');
    expect(cfg.providers.get('router')?.cachingRoute).toBe('openrouter');
  });

  it('api: the Responses API for an OpenAI-kind provider; openai-codex speaks it by default (SPEC §15.1)', () => {
    const cfg = providersOf(
      'providers:\n  openai: { api: responses }\n  openai-codex: {}\n  proxy: { base_url: http://127.0.0.1:9/v1 }\n',
    );
    expect(cfg.providers.get('openai')).toMatchObject({ api: 'responses', baseUrl: 'https://api.openai.com/v1' });
    expect(cfg.providers.get('openai-codex')).toMatchObject({
      kind: 'openai',
      api: 'responses',
      baseUrl: 'https://chatgpt.com/backend-api/codex',
      apiKeyEnv: 'OPENAI_CODEX_ACCESS_TOKEN',
    });
    expect(cfg.providers.get('proxy')?.api).toBe('chat_completions');
    // A stable account label for replay (a rotating OAuth token would change the key's fingerprint).
    expect(
      providersOf('providers:\n  openai-codex: { account: team-a }\n').providers.get('openai-codex')?.account,
    ).toBe('team-a');
    expect(() => providersOf('providers:\n  openai: { api: completions }\n')).toThrow(
      'Invalid configuration: providers.openai.api: expected chat_completions, responses or codex_app_server, got "completions"',
    );
    expect(() => providersOf('providers:\n  anthropic: { api: responses }\n')).toThrow(
      'Invalid configuration: providers.anthropic.api: expected chat_completions (the only API of an anthropic provider), got "responses"',
    );
  });

  it('no providers and no model: nothing configured', () => {
    expect(providersOf('')).toEqual({ providers: new Map(), main: { model: null, provider: null } });
  });

  it('a well-known model.provider is configured implicitly with its defaults', () => {
    const cfg = providersOf('model:\n  default: gpt-5.5\n  provider: openai\n');
    expect([...cfg.providers.keys()]).toEqual(['openai']);
    expect(cfg.main).toEqual({ model: 'gpt-5.5', provider: 'openai' });
  });

  it('infers model.provider from the only provider, a models list or the model family', () => {
    expect(
      providersOf('model: { default: m1 }\nproviders:\n  local: { base_url: "http://h/v1" }\n').main.provider,
    ).toBe('local');
    const two = 'providers:\n  openai: {}\n  local: { base_url: "http://h/v1", models: [qwen3] }\n';
    expect(providersOf(`model: { default: qwen3 }\n${two}`).main.provider).toBe('local');
    expect(providersOf(`model: { default: gpt-5.5 }\n${two}`).main.provider).toBe('openai');
  });

  it.each([
    [
      'providers: [openai]\n',
      'Invalid configuration: providers: expected mapping of provider id → provider settings, got ["openai"]',
    ],
    ['providers:\n  openai:\n    base_ur: http://x\n', 'Invalid configuration: providers.openai.base_ur: unknown key'],
    [
      'providers:\n  openai:\n    base_url: ftp://x\n',
      'Invalid configuration: providers.openai.base_url: expected URL string, got "ftp://x"',
    ],
    [
      'providers:\n  openai:\n    kind: gemini\n',
      'Invalid configuration: providers.openai.kind: expected openai or anthropic, got "gemini"',
    ],
    [
      'providers:\n  openai:\n    api_key_env: sk-live-123\n',
      'Invalid configuration: providers.openai.api_key_env: expected null or environment variable name matching ^[A-Za-z_][A-Za-z0-9_]*$, got "sk-live-123"',
    ],
    [
      'providers:\n  local:\n    kind: openai\n',
      'Invalid configuration: providers.local.base_url: expected URL string (required for providers other than openai, openai-codex, anthropic and openrouter), got null',
    ],
    [
      'providers:\n  auto: {}\n',
      'Invalid configuration: providers.auto: expected a provider id matching ^[a-z0-9][a-z0-9_-]{0,63}$ other than "auto" and "main", got "auto"',
    ],
    [
      'providers:\n  openai: 3\n',
      'Invalid configuration: providers.openai: expected mapping (or empty, for the defaults of a well-known provider), got 3',
    ],
    ['model:\n  default: ""\n', 'Invalid configuration: model.default: expected null or non-empty string, got ""'],
    [
      'model:\n  provider: mystery\nproviders:\n  openai: {}\n',
      'Invalid configuration: model.provider: expected a provider id configured under providers (openai), got "mystery"',
    ],
    [
      'model:\n  default: llama3\nproviders:\n  openai: {}\n  anthropic: {}\n',
      "Invalid configuration: model.provider: expected a provider id configured under providers (openai, anthropic); required when several providers are configured and none is known to serve 'llama3', got null",
    ],
  ])('rejects %j', (yaml, message) => {
    expect(() => providersOf(yaml)).toThrow(message);
  });

  it('the key lives in the named environment variable, read when the provider is used', () => {
    const openai = providersOf('providers:\n  openai: {}\n').providers.get('openai');
    if (!openai) throw new Error('missing');
    expect(providerApiKey(openai, { OPENAI_API_KEY: 'sk-test' })).toBe('sk-test');
    expect(() => providerApiKey(openai, {})).toThrow(ProviderKeyMissingError);
    expect(() => providerApiKey(openai, { OPENAI_API_KEY: ' ' })).toThrow(
      "Provider 'openai' needs an API key: environment variable OPENAI_API_KEY is not set (providers.openai.api_key_env).",
    );
    const keyless = providersOf('providers:\n  openai: { api_key_env: null }\n').providers.get('openai');
    expect(keyless && providerApiKey(keyless, {})).toBeNull();
  });
});

describe('providerServingModel (auxiliary.compression.provider: auto)', () => {
  const { providers } = providersOf(EXAMPLE);
  it.each([
    ['llama3.1:8b', 'local'],
    ['LLAMA3.1:8B', 'local'],
    ['claude-haiku-4-5', 'anthropic'],
    ['anthropic/claude-haiku-4.5', 'openrouter'],
    ['gpt-5.4-mini', 'openai'],
    ['o4-mini', 'openai'],
    ['mistral-small', 'main-fallback'],
  ])('%s → %s', (model, expected) => {
    expect(providerServingModel(model, providers, 'main-fallback')).toBe(expected);
  });
});

describe('cachingRouteFor: the route the prepared context is marked for', () => {
  it('follows the configured provider, by host for OpenRouter under another id', () => {
    const config = providersOf(`
model: { default: anthropic/claude-sonnet-5, provider: router }
providers:
  router: { base_url: https://openrouter.ai/api/v1 }
  local: { base_url: http://127.0.0.1:11434/v1 }
  anthropic: {}
`);
    expect(cachingRouteFor(config, null)).toBe('openrouter');
    expect(cachingRouteFor(config, 'local')).toBeNull();
    expect(cachingRouteFor(config, 'anthropic')).toBe('anthropic');
  });

  it('knows the well-known providers without a providers: section, and nothing else', () => {
    const empty = providersOf('');
    expect(cachingRouteFor(empty, 'anthropic')).toBe('anthropic');
    expect(cachingRouteFor(empty, 'openrouter')).toBe('openrouter');
    expect(cachingRouteFor(empty, 'openai')).toBeNull();
    expect(cachingRouteFor(empty, 'mystery')).toBeNull();
    expect(cachingRouteFor(null, null)).toBeNull();
  });
});

describe('ProviderClients: SDK clients kept for reuse', () => {
  const openai = (client: ProviderClient) => (client.kind === 'openai' ? client.openai : null);

  it('one client per provider, key and timeout; a changed key or configuration gets a new one', () => {
    const clients = new ProviderClients();
    const provider = providerConfig('local', 'openai', 'http://127.0.0.1:9/v1');
    const first = clients.get(provider, { env: { TEST_LLM_KEY: 'sk-one' }, timeoutMs: 5_000 });
    expect(clients.get(provider, { env: { TEST_LLM_KEY: 'sk-one' }, timeoutMs: 5_000 })).toBe(first);
    expect(openai(first)?.apiKey).toBe('sk-one');

    const rotated = clients.get(provider, { env: { TEST_LLM_KEY: 'sk-two' }, timeoutMs: 5_000 });
    expect(rotated).not.toBe(first);
    expect(openai(rotated)?.apiKey).toBe('sk-two');
    const slower = clients.get(provider, { env: { TEST_LLM_KEY: 'sk-two' }, timeoutMs: 9_000 });
    expect(slower).not.toBe(rotated);
    expect(slower.timeoutMs).toBe(9_000);

    const reloaded = { ...provider };
    expect(clients.get(reloaded, { env: { TEST_LLM_KEY: 'sk-two' }, timeoutMs: 5_000 })).not.toBe(rotated);
    expect(() => clients.get(provider, { env: {}, timeoutMs: 5_000 })).toThrow(ProviderKeyMissingError);
  });
});
