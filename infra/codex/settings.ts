// The settings of a `codex_app_server` provider (SPEC §15.2; config.yaml `providers.<id>` with
// `api: codex_app_server`): which binary runs the app-server, its CODEX_HOME, the sandbox of its threads, `-c`
// overrides, and the upstream it calls when the provider gives a `base_url` (otherwise Codex's own, e.g. the ChatGPT
// login kept in CODEX_HOME). Validated with the other provider keys (providers.ts), same error texts.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../engine/config.js';
import type { FieldRule } from '../config/fieldRules.js';

export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

export interface AppServerSettings {
  /** The `codex` executable (default: `codex` on PATH). */
  command: string;
  /** CODEX_HOME of the process: its threads' rollouts (needed to resume them) and its login. */
  codexHome: string;
  /** The sandbox of the threads' commands. */
  sandbox: SandboxMode;
  /** `-c key=value` overrides, applied last (e.g. `model_auto_compact_token_limit`). */
  config: Record<string, string | number | boolean>;
  /** The Responses endpoint Codex calls, when the provider gives one; null: Codex's configured default. */
  upstream: { baseUrl: string; apiKeyEnv: string | null; headers: Record<string, string> } | null;
}

/** Keys only a `codex_app_server` provider has. */
export const APP_SERVER_RULES = {
  command: { allowed: 'non-empty string', schema: z.string().min(1) },
  codex_home: { allowed: 'non-empty string (a directory)', schema: z.string().min(1) },
  sandbox: { allowed: SANDBOX_MODES.join(', '), schema: z.enum(SANDBOX_MODES) },
  config: {
    allowed: 'map of Codex config key → string, number or boolean',
    schema: z.record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()])),
  },
} satisfies Record<string, FieldRule<unknown>>;

export type AppServerFields = {
  [K in keyof typeof APP_SERVER_RULES]?: z.infer<(typeof APP_SERVER_RULES)[K]['schema']>;
};

/**
 * The settings of a provider with `api: codex_app_server`; undefined for any other API, which may not use these
 * keys (`Invalid configuration: providers.<id>.<key>: unknown key`).
 */
export function appServerSettingsFor(
  prefix: string,
  api: string,
  fields: AppServerFields,
  upstream: { baseUrl: string | undefined; apiKeyEnv: string | null; headers: Record<string, string> },
): AppServerSettings | undefined {
  if (api !== 'codex_app_server') {
    const key = (Object.keys(APP_SERVER_RULES) as (keyof typeof APP_SERVER_RULES)[]).find(
      (k) => fields[k] !== undefined,
    );
    if (key) throw ConfigError.unknownKey(`${prefix}.${key}`);
    return undefined;
  }
  return {
    command: fields.command ?? 'codex',
    codexHome: fields.codex_home ?? join(homedir(), '.codex'),
    sandbox: fields.sandbox ?? 'read-only',
    config: { ...(fields.config ?? {}) },
    upstream:
      upstream.baseUrl === undefined
        ? null
        : { baseUrl: upstream.baseUrl.replace(/\/+$/, ''), apiKeyEnv: upstream.apiKeyEnv, headers: upstream.headers },
  };
}
