// config.yaml loading (DESIGN.md §6): parsed with `yaml`, the owned sections validated (ownedConfig.ts) at start-up so
// a bad key fails with `Invalid configuration: <key>: ...` (SPEC §2.1) before any session runs.
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError } from '../../engine/config.js';
import { env } from './env.js';
import { type OwnedConfig, parseOwnedConfig } from './ownedConfig.js';

export interface LoadedConfig extends OwnedConfig {
  /** Where the configuration came from (`null`: no file, defaults only). */
  path: string | null;
  /** The whole parsed document, for the sections this spec does not own (providers, gateway, ...). */
  raw: Record<string, unknown>;
}

/** Parses config.yaml text; YAML syntax errors are reported as configuration errors too. */
export function parseConfigText(text: string, path: string | null = null): LoadedConfig {
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (err) {
    throw new ConfigError('', `Invalid configuration: ${path ?? 'config.yaml'}: ${(err as Error).message}`);
  }
  const owned = parseOwnedConfig(raw);
  return { ...owned, path, raw: raw as Record<string, unknown> };
}

/** Loads `path` (default: $DURABLE_CONTEXT_CONFIG, else ./config.yaml when it exists, else defaults). */
export function loadConfig(path: string | undefined = env.DURABLE_CONTEXT_CONFIG ?? undefined): LoadedConfig {
  const candidate = path ?? (existsSync('config.yaml') ? 'config.yaml' : undefined);
  if (!candidate) return parseConfigText('', null);
  return parseConfigText(readFileSync(candidate, 'utf8'), candidate);
}
