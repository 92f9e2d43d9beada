// The prepared context (DESIGN.md §1, SPEC §12): what a model is sent for a conversation — the active transcript,
// tool pairs sanitised (§8.7), cache markers placed when §12.1 turns caching on (and removed otherwise). One function
// for both product modes: the gateway's `/context` route (context-management mode) and the agent turn (chat backend
// mode) build it here, so what a client reads is what the model gets.
import {
  applyAnthropicCacheControl,
  type PromptCachingState,
  promptCachingState,
  stripCacheMarkers,
} from './cacheControl.js';
import type { CacheTtl } from './config.js';
import { sanitizeToolPairs } from './sanitizer.js';
import type { ChatMessage } from './types.js';

/** Where the context goes: the model and the caching route of its provider (SPEC §12.1). */
export interface ContextTarget {
  model: string;
  /** 'anthropic' (native API), 'openrouter', or null: a route without prompt caching. */
  cachingRoute: string | null;
  /** `prompt_caching.cache_ttl`; null disables caching. */
  cacheTtl: CacheTtl | null;
}

export interface PreparedContext {
  messages: ChatMessage[];
  caching: PromptCachingState;
}

/** Cache markers for `target` on messages that are already sanitised (or are no transcript, e.g. a summary prompt). */
export function withCacheMarkers(messages: readonly ChatMessage[], target: ContextTarget): PreparedContext {
  const caching = promptCachingState({
    model: target.model,
    provider: target.cachingRoute ?? undefined,
    cacheTtl: target.cacheTtl,
  });
  if (!caching.enabled || caching.ttl === null) return { messages: stripCacheMarkers(messages), caching };
  return {
    messages: applyAnthropicCacheControl(messages, { cacheTtl: caching.ttl, nativeAnthropic: caching.nativeAnthropic }),
    caching,
  };
}

/** The prepared context of a transcript: sanitised, then cache-marked for `target`. */
export function prepareContext(transcript: readonly ChatMessage[], target: ContextTarget): PreparedContext {
  return withCacheMarkers(sanitizeToolPairs(transcript), target);
}
