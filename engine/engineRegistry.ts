// Context engine selection (SPEC §10.3 steps 2–3, §18.11). Step 1 (the plugin directory) is file access and
// belongs to the host, which calls `resolveContextEngine` when no plugin was found.
import { ContextCompressor, type ContextCompressorOptions } from './compressor.js';
import { CONTEXT_ENGINE_NAME_PATTERN } from './config.js';
import type { ContextEngine } from './types.js';

export const BUILTIN_CONTEXT_ENGINE = 'compressor';
export const RESERVED_ENGINE_NAME_ERROR = "Context engine name 'compressor' is reserved for the built-in engine";

export type ContextEngineFactory = (...args: any[]) => ContextEngine;

export type EngineSource = 'builtin' | 'registry';

export interface EngineResolution {
  engine: ContextEngine;
  source: EngineSource;
  /** The log line of §10.3 when another name was configured but the built-in engine is used. */
  warning: string | null;
}

const factories = new Map<string, ContextEngineFactory>();
let warningListener: ((message: string) => void) | null = null;

export function engineNotFoundWarning(name: string): string {
  return `Context engine '${name}' not found; using the built-in compressor.`;
}

export function engineFailedWarning(name: string): string {
  return `Context engine '${name}' failed to load; using the built-in compressor.`;
}

/**
 * The host's lines (not texts of SPEC §16.5) for an engine that loaded but could not compress: its `compress()`
 * threw, or it returned a transcript the host refuses. The reason itself stays in the record and the worker log.
 */
export function engineCompressFailedWarning(name: string): string {
  return `Context engine '${name}' failed to compress; using the built-in compressor.`;
}

export function engineResultRefusedWarning(name: string): string {
  return `Context engine '${name}' returned a transcript the host refuses; using the built-in compressor.`;
}

/** §10.3: the reserved name and names outside the `context.engine` pattern throw; re-registering replaces. */
export function registerContextEngine(name: string, factory: ContextEngineFactory): void {
  if (name === BUILTIN_CONTEXT_ENGINE) throw new Error(RESERVED_ENGINE_NAME_ERROR);
  if (typeof name !== 'string' || !CONTEXT_ENGINE_NAME_PATTERN.test(name)) {
    throw new Error(`Invalid context engine name '${String(name)}': expected ${CONTEXT_ENGINE_NAME_PATTERN.source}`);
  }
  if (typeof factory !== 'function') throw new Error(`Context engine factory for '${name}' is not a function`);
  factories.set(name, factory);
}

/** Whether a factory is registered under `name` (nothing is built). */
export function isContextEngineRegistered(name: string): boolean {
  return factories.has(name);
}

/** Removes a registration (tests, plugin reloads). */
export function unregisterContextEngine(name: string): boolean {
  return factories.delete(name);
}

/** Receives the warnings of `resolveContextEngine` (e.g. the host's logger); null disables. */
export function setContextEngineWarningListener(listener: ((message: string) => void) | null): void {
  warningListener = listener;
}

/** SPEC §18.11: what counts as an engine (a `name`, `shouldCompress` and `compress`). */
export function isContextEngine(value: unknown): value is ContextEngine {
  if (value === null || typeof value !== 'object') return false;
  const engine = value as Partial<ContextEngine>;
  return (
    typeof engine.name === 'string' &&
    typeof engine.shouldCompress === 'function' &&
    typeof engine.compress === 'function'
  );
}

function builtin(args: any[], warning: string | null): EngineResolution {
  return { engine: new ContextCompressor(args[0] as ContextCompressorOptions), source: 'builtin', warning };
}

/** §10.3 steps 2–3 with the reason, for hosts that log it themselves. */
export function resolveContextEngineDetailed(name: string | undefined, ...args: any[]): EngineResolution {
  if (name === undefined || name === null || name === '' || name === BUILTIN_CONTEXT_ENGINE) return builtin(args, null);
  const factory = factories.get(name);
  if (factory === undefined) return builtin(args, engineNotFoundWarning(name));
  try {
    const engine: unknown = factory(...args);
    if (isContextEngine(engine)) return { engine, source: 'registry', warning: null };
  } catch {
    // A throwing factory falls back like an invalid one (§18.11).
  }
  return builtin(args, engineFailedWarning(name));
}

/** §10.3: registered name → factory(...args); unknown name or a failing factory → new ContextCompressor(args[0]). */
export function resolveContextEngine(name: string | undefined, ...args: any[]): ContextEngine {
  const resolution = resolveContextEngineDetailed(name, ...args);
  if (resolution.warning !== null) warningListener?.(resolution.warning);
  return resolution.engine;
}
