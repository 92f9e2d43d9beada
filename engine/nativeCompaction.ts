// OpenAI Responses native compaction (SPEC §15.1, issue #13 §1): the rules, pure — the gate checked on every
// request, the threshold sent with it, what counts as the server refusing the field, and which returned
// `compaction` items may be replayed to a route. The Responses provider that uses them calls these; nothing here
// does I/O.
import type { CompressionConfig } from './config.js';
import { baseModelName, CODEX_OAUTH_PROVIDER } from './modelRegistry.js';

/** The gpt-5.6 family (SPEC §15.1 gate 3): other models fail server-side without a structured rejection. */
export const NATIVE_COMPACTION_MODELS: ReadonlySet<string> = new Set([
  'gpt-5.6',
  'gpt-5.6-sol',
  'gpt-5.6-terra',
  'gpt-5.6-luna',
]);

/** What the threshold leaves below the local trigger, so that the server compacts first (SPEC §15.1). */
export const NATIVE_THRESHOLD_MARGIN = 8_000;

/** The one host the `openai` route may have for the field (SPEC §15.1 gate 4). */
const OPENAI_API_HOST = 'api.openai.com';

export interface NativeCompactionRequest {
  /** The wire API of the request. */
  api: 'responses' | 'chat_completions' | 'anthropic_messages';
  /** The model as configured (a -900k alias included). */
  model: string;
  /** The provider id of the route (`openai`, `openai-codex`, `openrouter`, …). */
  provider: string;
  /** The route's base URL. */
  baseUrl: string;
  /** The session turned the feature off after a rejection (stored on the session). */
  disabledForSession: boolean;
}

export type NativeCompactionGate =
  | { send: true }
  | {
      send: false;
      reason: 'not_opted_in' | 'not_responses' | 'model_not_eligible' | 'route_not_eligible' | 'disabled';
    };

function hostOf(baseUrl: string): string | null {
  try {
    return new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** SPEC §15.1 gate 4: `openai` at `api.openai.com`, or `openai-codex` — the only routes that issue checkpoints. */
export function nativeRouteEligible(provider: string, baseUrl: string): boolean {
  return provider === CODEX_OAUTH_PROVIDER || (provider === 'openai' && hostOf(baseUrl) === OPENAI_API_HOST);
}

/** SPEC §15.1 gate: the `context_management` field is sent only when all five conditions hold, checked in order. */
export function nativeCompactionGate(
  config: Pick<CompressionConfig, 'codexResponsesNative'>,
  request: NativeCompactionRequest,
): NativeCompactionGate {
  if (config.codexResponsesNative !== true) return { send: false, reason: 'not_opted_in' };
  if (request.api !== 'responses') return { send: false, reason: 'not_responses' };
  if (!NATIVE_COMPACTION_MODELS.has(baseModelName(request.model))) return { send: false, reason: 'model_not_eligible' };
  if (!nativeRouteEligible(request.provider, request.baseUrl)) return { send: false, reason: 'route_not_eligible' };
  if (request.disabledForSession) return { send: false, reason: 'disabled' };
  return { send: true };
}

/** SPEC §15.1 threshold: `T = max(1, min(codex_responses_compact_threshold, thresholdTokens − 8,000))`. */
export function nativeCompactThreshold(
  config: Pick<CompressionConfig, 'codexResponsesCompactThreshold'>,
  thresholdTokens: number,
): number {
  return Math.max(1, Math.min(config.codexResponsesCompactThreshold, thresholdTokens - NATIVE_THRESHOLD_MARGIN));
}

/** The request field itself. */
export function contextManagementField(threshold: number): Array<{ type: 'compaction'; compact_threshold: number }> {
  return [{ type: 'compaction', compact_threshold: threshold }];
}

/** A provider error as far as the rejection rule needs it. */
export interface ProviderErrorShape {
  status: number;
  param?: string | null;
  code?: string | null;
  message?: string | null;
}

/**
 * SPEC §15.1 rejection: a 4xx whose error names `context_management` — its `param`, or an `unsupported_parameter`
 * code whose message mentions `context_management` or `compaction`. Then the feature is disabled for the session
 * and the same request is retried once without the field; any other error is handled as usual.
 */
export function isNativeCompactionRejection(error: ProviderErrorShape): boolean {
  if (error.status < 400 || error.status >= 500) return false;
  if (typeof error.param === 'string' && error.param.includes('context_management')) return true;
  const message = (error.message ?? '').toLowerCase();
  return (
    error.code === 'unsupported_parameter' && (message.includes('context_management') || message.includes('compaction'))
  );
}

/** Where a replay item came from: items of one provider/endpoint/account are never sent to another (§15.1). */
export interface ReplayOrigin {
  provider: string;
  baseUrl: string;
  account: string | null;
}

/** Both name the same provider, base URL (trailing slashes aside) and account. */
export const sameOrigin = (a: ReplayOrigin, b: ReplayOrigin): boolean =>
  a.provider === b.provider &&
  a.baseUrl.replace(/\/+$/, '') === b.baseUrl.replace(/\/+$/, '') &&
  a.account === b.account;

/** The replay items that may go with a request to `route`: those it issued itself. */
export function replayableItems<T extends { origin: ReplayOrigin }>(items: readonly T[], route: ReplayOrigin): T[] {
  return items.filter((item) => sameOrigin(item.origin, route));
}

/**
 * A response's `compaction` output items, kept with the reply they came with (SPEC §15.1 replay data), apart from
 * its content: the SPEC §3.2 estimate never counts their encrypted bytes, and they go back only to their origin.
 */
export interface NativeReplay {
  origin: ReplayOrigin;
  items: Array<Record<string, unknown>>;
  /**
   * The position of the last row the request carried: the items stand in for the rows up to it. Rows stored while
   * the model answered sit before the reply yet after this position, and are sent after the items.
   */
  throughPosition?: number;
}

/** What a native checkpoint stands in for in the live transcript: its non-system rows' estimate and count. */
export interface NativeCovered {
  tokens: number;
  messages: number;
}

/** The `compaction` items among a response's output items (SPEC §15.1), as returned. */
export function compactionItemsOf(output: readonly unknown[]): Array<Record<string, unknown>> {
  return output.filter(
    (item): item is Record<string, unknown> =>
      typeof item === 'object' && item !== null && (item as Record<string, unknown>).type === 'compaction',
  );
}

/**
 * Where a request to `route` starts (SPEC §15.1 replay): the newest message whose replay items `route` issued.
 * Its items stand in for everything before it, so the request is the system prompt, those items, then that message
 * and what follows. Null when nothing may be replayed: the whole transcript is sent.
 */
export function nativeCheckpointIndex(
  replays: readonly (NativeReplay | null | undefined)[],
  route: ReplayOrigin,
): number | null {
  for (let i = replays.length - 1; i >= 0; i--) {
    const replay = replays[i];
    if (replay && replay.items.length > 0 && replayableItems([replay], route).length > 0) return i;
  }
  return null;
}

/**
 * The rows a request sends after a checkpoint's items (SPEC §15.1 replay): the system rows, and every row after the
 * last one the checkpoint's request carried (`through`) — the reply, anything stored while the model answered (it
 * sits before the reply), and what followed. Without a checkpoint, all rows.
 */
export function rowsAfterCheckpoint<R extends { position: number; role: string }>(
  rows: readonly R[],
  through: number | null,
): R[] {
  if (through === null) return [...rows];
  return rows.filter((r) => r.position > through || r.role === 'system');
}
