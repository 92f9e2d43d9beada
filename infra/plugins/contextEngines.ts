// SPEC §10.3 step 1 (the plugin directory) and the host's side of the resolution: `plugins/context_engine/<name>/`
// (entry `index.js`, default export a factory) → the engine registry (engine/engineRegistry.ts, steps 2–3) → the
// built-in compressor with the §10.3 log line, never silently (issue #14 §1). File access, so it lives here and not
// in engine/; the workflow never loads a plugin (DESIGN.md §3): the compaction activities do.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  BUILTIN_CONTEXT_ENGINE,
  CONTEXT_ENGINE_NAME_PATTERN,
  type ContextCompressorOptions,
  type ContextEngine,
  engineFailedWarning,
  isContextEngine,
  isContextEngineRegistered,
  resolveContextEngineDetailed,
} from '../../engine/index.js';
import { DEFAULT_PLUGIN_DIR } from './pluginDir.js';

export { DEFAULT_PLUGIN_DIR };

/** The entry module of a plugin (SPEC §10.3, §16.4). */
export const PLUGIN_ENTRY = 'index.js';

export type EngineOrigin = 'plugin' | 'registry' | 'builtin';

export interface LoadedEngine {
  /** The built-in compressor when `origin` is `builtin`. */
  engine: ContextEngine;
  origin: EngineOrigin;
  /** The §10.3 line when another name was configured but the built-in compressor is used; null otherwise. */
  warning: string | null;
}

type Factory = (options: ContextCompressorOptions) => unknown;

/** The plugin's directory when it exists; the name pattern keeps it inside `pluginDir` (SPEC §10.3). */
function pluginDirectory(pluginDir: string, name: string): string | null {
  if (!CONTEXT_ENGINE_NAME_PATTERN.test(name)) return null;
  const dir = join(pluginDir, name);
  return existsSync(dir) && statSync(dir).isDirectory() ? dir : null;
}

async function importFactory(dir: string): Promise<Factory> {
  const module = (await import(pathToFileURL(join(dir, PLUGIN_ENTRY)).href)) as { default?: unknown };
  if (typeof module.default !== 'function') throw new TypeError(`${PLUGIN_ENTRY} has no default-exported factory`);
  return module.default as Factory;
}

/**
 * Where the engine `name` would come from, without building it: its plugin directory, the registry, or nowhere
 * (null). `compressor`, empty and absent names are the built-in engine. Whether it loads is known once it is built
 * (loadContextEngine).
 */
export function locateContextEngine(
  name: string | null | undefined,
  pluginDir: string = DEFAULT_PLUGIN_DIR,
): EngineOrigin | null {
  if (!name || name === BUILTIN_CONTEXT_ENGINE) return 'builtin';
  if (pluginDirectory(pluginDir, name) !== null) return 'plugin';
  return isContextEngineRegistered(name) ? 'registry' : null;
}

/**
 * The engine `name` selects for one compaction, built with the built-in engine's constructor arguments. A plugin
 * directory that exists wins over a registered engine of the same name; a plugin that fails to load (import error,
 * no factory, a factory that throws or returns no engine) falls back to the built-in compressor with the "failed to
 * load" line. `compressor`, empty and absent names select the built-in engine without a line.
 */
export async function loadContextEngine(
  name: string | null | undefined,
  options: ContextCompressorOptions,
  pluginDir: string = DEFAULT_PLUGIN_DIR,
): Promise<LoadedEngine> {
  if (!name || name === BUILTIN_CONTEXT_ENGINE) {
    return { ...resolveContextEngineDetailed(undefined, options), origin: 'builtin' };
  }
  const dir = pluginDirectory(pluginDir, name);
  if (dir === null) {
    const resolved = resolveContextEngineDetailed(name, options);
    return { engine: resolved.engine, origin: resolved.source, warning: resolved.warning };
  }
  try {
    const engine = (await importFactory(dir))(options);
    if (isContextEngine(engine)) return { engine, origin: 'plugin', warning: null };
  } catch {
    // Any failure to load falls back like an invalid engine (§18.11); the line says so.
  }
  return { ...resolveContextEngineDetailed(undefined, options), origin: 'builtin', warning: engineFailedWarning(name) };
}

/**
 * The worker's start-up line for config.yaml's `context.engine` (the engine itself is built per compaction, with the
 * conversation's model): which engine compactions use, or the §10.3 line when the built-in one would be used instead.
 * Tenants may name another engine in their policy; that one is resolved when they compact.
 */
export async function describeContextEngine(name: string, pluginDir: string = DEFAULT_PLUGIN_DIR): Promise<string> {
  const loaded = await loadContextEngine(
    name,
    {
      model: 'start-up-check',
      contextLength: 128_000,
      summarize: async () => {
        throw new Error('the start-up check does not summarise');
      },
    },
    pluginDir,
  );
  if (loaded.warning !== null) return loaded.warning;
  if (loaded.origin === 'builtin') return 'Context engine: the built-in compressor (context.engine).';
  const where = loaded.origin === 'plugin' ? `the plugin in ${join(pluginDir, name)}` : 'a registered engine';
  return `Context engine '${name}': ${where} (context.engine).`;
}
