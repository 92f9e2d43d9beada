// The configuration that points the product at the fake OpenAI server (the real `openai` client talks to it): the
// config.yaml text (a worker process takes it as CONFIG_YAML), the environment holding its key, and the LLM
// dependencies an in-process worker gets from it.
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { type LlmDeps, llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import type { OpenAIFake } from './openaiFake.js';

export interface FakeOpenAIProvider {
  yaml: string;
  keys: Record<string, string>;
  llm: LlmDeps;
}

/** Model `gpt-test` on provider `openai` at the fake; `extraYaml` lines are appended to config.yaml. */
export function fakeOpenAIProvider(openai: OpenAIFake, extraYaml: string[] = []): FakeOpenAIProvider {
  const yaml = [
    'model: { default: gpt-test, provider: openai }',
    'providers:',
    `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
    ...extraYaml,
  ].join('\n');
  const keys = { FAKE_OPENAI_KEY: 'sk-openai' };
  return { yaml, keys, llm: llmDepsFromConfig(parseConfigText(yaml), keys, () => undefined) };
}
