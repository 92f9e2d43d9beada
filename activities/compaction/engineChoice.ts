// SPEC §10.3 for one compaction: the tenant's `context.engine` (tenant policy → config.yaml → `compressor`) and the
// engine it selects, built with the built-in engine's constructor arguments for the session's model. The choice is made
// in an activity (plugin files are host I/O) and reaches the workflow as the align result, so a replay takes the same
// branch (issue #14 §1).
import { Context } from '@temporalio/activity';
import {
  BUILTIN_CONTEXT_ENGINE,
  type CompressionConfig,
  type ContextCompressorOptions,
  DEFAULT_HOST_POLICY,
  engineNotFoundWarning,
  normalizeCompressionConfig,
  type Summarizer,
} from '../../engine/index.js';
import { effectiveTenantPolicy } from '../../infra/config/tenantPolicy.js';
import { getSession } from '../../infra/db/sessions.js';
import { getTenantPolicy } from '../../infra/db/tenants.js';
import { type LoadedEngine, loadContextEngine, locateContextEngine } from '../../infra/plugins/contextEngines.js';
import { type CompactionActivityDeps, summarizerForSession } from './record.js';

export type EngineDeps = Pick<
  CompactionActivityDeps,
  'db' | 'summarizer' | 'summarizerFor' | 'baseConfig' | 'contextEngine' | 'pluginDir'
>;

/** The tenant's engine name and compression configuration (one policy read). */
export async function tenantEngineSettings(
  deps: EngineDeps,
  tenantId: string,
): Promise<{ name: string; config: CompressionConfig }> {
  const base = {
    config: deps.baseConfig ?? normalizeCompressionConfig({}),
    host: DEFAULT_HOST_POLICY,
    engine: deps.contextEngine ?? BUILTIN_CONTEXT_ENGINE,
  };
  const stored = await getTenantPolicy(deps.db, tenantId);
  const effective = effectiveTenantPolicy(base, stored?.policy);
  // Said, not silent (SPEC §10.3): config.yaml's engine stands in for the tenant's.
  if (effective.invalid !== null) {
    Context.current().log.warn(
      `Tenant '${tenantId}': stored policy no longer validates (${effective.invalid}); using config.yaml`,
    );
  }
  return { name: effective.engine, config: effective.config };
}

/** A summarizer that counts its calls; without a summary model it throws (the engine may summarise, SPEC §10.3). */
function countingSummarizer(summarizer: Summarizer | null, calls: { count: number }): Summarizer {
  return async (request) => {
    calls.count += 1;
    if (summarizer === null) throw new Error('no summary model is configured for this conversation');
    return summarizer(request);
  };
}

export interface EngineForSession {
  loaded: LoadedEngine;
  /** How often the engine called the host's summariser so far. */
  summarizerCalls: { count: number };
}

/** The engine `name` selects, built for the session (model, provider, window, the tenant's configuration). */
export async function engineForSession(
  deps: EngineDeps,
  target: { tenantId: string; sessionId: string; contextLength: number; name: string; config: CompressionConfig },
): Promise<EngineForSession> {
  const session = await getSession(deps.db, target.tenantId, target.sessionId);
  const summarizerCalls = { count: 0 };
  const options: ContextCompressorOptions = {
    model: session?.model ?? '',
    contextLength: target.contextLength,
    ...(session?.provider ? { provider: session.provider } : {}),
    config: target.config,
    summarize: countingSummarizer(await summarizerForSession(deps, target.tenantId, target.sessionId), summarizerCalls),
    now: Date.now,
  };
  return { loaded: await loadContextEngine(target.name, options, deps.pluginDir), summarizerCalls };
}

/** The §10.3 line in the worker's log (the record and a notice carry it too). */
export function logEngineFallback(
  line: string,
  context: { tenantId: string; compactionId: string; reason?: string },
): void {
  const { tenantId, compactionId, reason } = context;
  Context.current().log.warn(line, { tenantId, compactionId, ...(reason ? { reason } : {}) });
}

/**
 * Which engine compresses this compaction: `engine` when the tenant's `context.engine` names one this worker has (a
 * plugin directory or a registration); null for the built-in phases, with the §10.3 line when another name was
 * configured. The engine is built once, by engineCompress, which falls back with the "failed to load" line if it
 * does not load.
 */
export async function chooseEngine(
  deps: EngineDeps,
  tenantId: string,
): Promise<{ engine: string | null; warning: string | null }> {
  const { name } = await tenantEngineSettings(deps, tenantId);
  const origin = locateContextEngine(name, deps.pluginDir);
  if (origin === 'builtin') return { engine: null, warning: null };
  if (origin === null) return { engine: null, warning: engineNotFoundWarning(name) };
  return { engine: name, warning: null };
}
