// Prompt caching, strategy `system_and_3` (SPEC §12): when caching is on, and where the at most four
// Anthropic cache breakpoints go.
import type { CacheTtl } from './config.js';
import { NOTICE_CACHE_DISABLED } from './constants.js';
import type { CacheControl, ChatMessage, ContentPart } from './types.js';

export interface CacheControlOptions {
  cacheTtl?: CacheTtl;
  nativeAnthropic?: boolean;
}

const MAX_BREAKPOINTS = 4;

/** SPEC §12.2 step 3: a fresh marker object per placement. */
function newMarker(cacheTtl: CacheTtl | undefined): CacheControl {
  return cacheTtl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
}

function hasMarker(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'cache_control' in value;
}

function withoutPartMarker(part: ContentPart): ContentPart {
  if (!hasMarker(part)) return part;
  const { cache_control: _removed, ...rest } = part;
  return rest as ContentPart;
}

/** SPEC §12.2 step 2: the same object when there is nothing to strip, else a copy without any marker. */
function stripMarkers(message: ChatMessage): ChatMessage {
  const content = message.content;
  const partsMarked = Array.isArray(content) && content.some(hasMarker);
  if (!hasMarker(message) && !partsMarked) return message;
  const { cache_control: _removed, ...rest } = message;
  const copy = rest as ChatMessage;
  if (partsMarked) copy.content = (content as ContentPart[]).map(withoutPartMarker);
  return copy;
}

function isEmptyContent(content: unknown): boolean {
  return content === null || content === undefined || content === '';
}

/** SPEC §12.2 step 4 (§18.13: missing content is treated like `null`). */
function canCarryMarker(message: ChatMessage, nativeAnthropic: boolean): boolean {
  if (message.role === 'tool') return nativeAnthropic;
  const content = message.content;
  if (typeof content === 'string' || isEmptyContent(content)) return true;
  return Array.isArray(content) && content.length > 0;
}

/** SPEC §12.2 step 7. */
function placeMarker(message: ChatMessage, marker: CacheControl, nativeAnthropic: boolean): ChatMessage {
  const content = message.content;
  if ((message.role === 'tool' && nativeAnthropic) || isEmptyContent(content)) {
    return { ...message, cache_control: marker };
  }
  if (typeof content === 'string') {
    return { ...message, content: [{ type: 'text', text: content, cache_control: marker }] };
  }
  const parts = content as ContentPart[];
  const last = parts[parts.length - 1] as ContentPart;
  return { ...message, content: [...parts.slice(0, -1), { ...last, cache_control: marker }] };
}

/** Indexes to mark (SPEC §12.2 steps 5–6): the system message at 0, then the last carriers, newest first. */
function markedIndexes(messages: readonly ChatMessage[], nativeAnthropic: boolean): number[] {
  const marked: number[] = [];
  const first = messages[0];
  if (first && first.role === 'system' && canCarryMarker(first, nativeAnthropic)) marked.push(0);
  for (let i = messages.length - 1; i >= 0 && marked.length < MAX_BREAKPOINTS; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role !== 'system' && canCarryMarker(message, nativeAnthropic)) marked.push(i);
  }
  return marked;
}

/** Every marker removed (the messages sent when caching is off); never mutates. */
export function stripCacheMarkers(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map(stripMarkers);
}

/** SPEC §12.2. Never mutates; idempotent; at most 4 markers. */
export function applyAnthropicCacheControl(
  messages: readonly ChatMessage[],
  options: CacheControlOptions = {},
): ChatMessage[] {
  const nativeAnthropic = options.nativeAnthropic === true;
  const result = messages.map(stripMarkers);
  for (const index of markedIndexes(result, nativeAnthropic)) {
    result[index] = placeMarker(result[index] as ChatMessage, newMarker(options.cacheTtl), nativeAnthropic);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// SPEC §12.1: when caching is on, and the status line.

export type PromptCachingReason = 'enabled' | 'not_claude' | 'unsupported_provider' | 'disabled_by_config';

export interface PromptCachingState {
  enabled: boolean;
  nativeAnthropic: boolean;
  ttl: CacheTtl | null;
  reason: PromptCachingReason;
  line: string;
}

export interface PromptCachingInput {
  model: string;
  provider: string | undefined;
  /** `prompt_caching.cache_ttl`; a falsy value disables caching. */
  cacheTtl: CacheTtl | null | false | '' | undefined;
}

const PROVIDER_LABELS: Readonly<Record<string, string>> = { anthropic: 'Anthropic', openrouter: 'OpenRouter' };

function disabled(reason: PromptCachingReason): PromptCachingState {
  return { enabled: false, nativeAnthropic: false, ttl: null, reason, line: NOTICE_CACHE_DISABLED };
}

export function promptCachingState(input: PromptCachingInput): PromptCachingState {
  if (!input.cacheTtl) return disabled('disabled_by_config');
  if (typeof input.model !== 'string' || !input.model.toLowerCase().includes('claude')) return disabled('not_claude');
  const provider = typeof input.provider === 'string' ? input.provider.toLowerCase() : '';
  const label = Object.hasOwn(PROVIDER_LABELS, provider) ? PROVIDER_LABELS[provider] : undefined;
  if (!label) return disabled('unsupported_provider');
  const ttl: CacheTtl = input.cacheTtl === '1h' ? '1h' : '5m';
  return {
    enabled: true,
    nativeAnthropic: provider === 'anthropic',
    ttl,
    reason: 'enabled',
    line: `💾 Prompt caching: ENABLED (Claude via ${label}, ${ttl} TTL)`,
  };
}
