// The model a conversation gets when the client names none: config.yaml `model.default` / `model.provider` /
// `model.context_length`, else a 200,000-token generic model.
import type { LoadedConfig } from '../../infra/config/loadConfig.js';

export function defaultModelFrom(config: LoadedConfig): {
  model: string;
  provider: string | null;
  contextLength: number | null;
} {
  const section = (config.raw.model ?? {}) as Record<string, unknown>;
  const model = typeof section.default === 'string' && section.default ? section.default : 'default-model';
  const provider = typeof section.provider === 'string' && section.provider ? section.provider : null;
  const contextLength = config.model.contextLength ?? (model === 'default-model' ? 200_000 : null);
  return { model, provider, contextLength };
}
