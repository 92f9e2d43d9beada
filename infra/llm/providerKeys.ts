// API keys of the configured providers (DESIGN.md §5): never in config.yaml; a provider names the environment
// variable that holds its key, read when the provider is used (a missing key surfaces then, not at start-up).
import type { ProviderConfig } from './providers.js';

export class ProviderKeyMissingError extends Error {
  readonly providerId: string;
  readonly envName: string;
  constructor(providerId: string, envName: string) {
    super(
      `Provider '${providerId}' needs an API key: environment variable ${envName} is not set (providers.${providerId}.api_key_env).`,
    );
    this.name = 'ProviderKeyMissingError';
    this.providerId = providerId;
    this.envName = envName;
  }
}

/** The provider's API key from `env`; null for keyless providers; throws when the variable is unset or empty. */
export function providerApiKey(
  provider: ProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): string | null {
  if (provider.apiKeyEnv === null) return null;
  const key = env[provider.apiKeyEnv];
  if (typeof key !== 'string' || key.trim() === '') throw new ProviderKeyMissingError(provider.id, provider.apiKeyEnv);
  return key;
}
