// Context lengths and the model registry (SPEC §4): registry lookup, resolution order, -900k aliases, the minimum
// window and the Codex gpt-5.5 autoraise predicate. The host resolves windows; the engine only receives them.
import type { CompressionConfig } from './config.js';
import { ALIAS_900K_WINDOW, MINIMUM_CONTEXT_LENGTH, UNKNOWN_MODEL_WINDOW } from './constants.js';
import { findBestKeyMatch } from './modelKeyMatch.js';

/** One registry row: a case-insensitive model substring, optionally `provider:substring` (SPEC §4.2). */
export interface ModelRegistryEntry {
  key: string;
  contextLength: number;
}
export type ModelRegistryTable = readonly ModelRegistryEntry[];

/** SPEC §4.2 minimum entries, in table order. Deployments pass an extended table to the functions below. */
export const DEFAULT_MODEL_REGISTRY: ModelRegistryTable = Object.freeze([
  { key: 'openai-codex:gpt-5.5', contextLength: 272_000 },
  { key: 'openai-codex:gpt-5.4', contextLength: 272_000 },
  { key: 'openai-codex:gpt-5.6', contextLength: 272_000 },
  { key: 'copilot:gpt-5.5', contextLength: 400_000 },
  { key: 'gpt-5.5', contextLength: 1_050_000 },
]);

/** Registry window by longest-substring match with the §5.2 tie-breaking, or `null` when nothing matches. */
export function lookupContextLength(
  model: string,
  provider?: string,
  table: ModelRegistryTable = DEFAULT_MODEL_REGISTRY,
): number | null {
  const entries = table.map((entry) => [entry.key, entry.contextLength] as const);
  const match = findBestKeyMatch(model, provider, entries, isPositiveInteger);
  return match ? match.value : null;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/** Integer with `,` thousands separators (SPEC §16), independent of any locale. */
export function formatThousands(value: number): string {
  const integer = Math.trunc(value);
  const digits = String(Math.abs(integer));
  let out = '';
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ',';
    out += digits[i];
  }
  return integer < 0 ? `-${out}` : out;
}

// ---------------------------------------------------------------------------------------------------------------
// -900k aliases (SPEC §4.3).

const ALIAS_SUFFIX = '-900k';
/** The closed alias set: alias base name → name sent to the provider. */
export const MODEL_900K_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  'gpt-5.4-900k': 'gpt-5.4',
  'gpt-5.6-sol-900k': 'gpt-5.6-sol',
  'gpt-5.6-terra-900k': 'gpt-5.6-terra',
  'gpt-5.6-luna-900k': 'gpt-5.6-luna',
});

export class ModelNotAvailableError extends Error {
  readonly requested: string;
  readonly base: string;
  constructor(requested: string, base: string) {
    super(`Model '${requested}' is not available: '${base}' has no -900k variant.`);
    this.name = 'ModelNotAvailableError';
    this.requested = requested;
    this.base = base;
  }
}

export interface ModelAlias {
  requested: string;
  /** Model id sent to the provider and used for usage and cost attribution. */
  sendAs: string;
  /** 900,000 for an alias, `null` for an ordinary model. */
  contextLength: number | null;
}

function hasAliasSuffix(model: string): boolean {
  return model.toLowerCase().endsWith(ALIAS_SUFFIX);
}

function stripAliasSuffix(model: string): string {
  return hasAliasSuffix(model) ? model.slice(0, -ALIAS_SUFFIX.length) : model;
}

/** SPEC §4.3: strips the suffix of an alias; throws `ModelNotAvailableError` for any other `-900k` id. */
export function resolveModelAlias(model: string): ModelAlias {
  if (!hasAliasSuffix(model)) return { requested: model, sendAs: model, contextLength: null };
  const lastSegment = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  if (!Object.hasOwn(MODEL_900K_ALIASES, lastSegment)) {
    throw new ModelNotAvailableError(model, stripAliasSuffix(model));
  }
  return { requested: model, sendAs: stripAliasSuffix(model), contextLength: ALIAS_900K_WINDOW };
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution order (SPEC §4.1).

export type ContextLengthSource = 'override' | 'alias' | 'provider' | 'registry' | 'fallback';

export interface ContextLengthResolution {
  contextLength: number;
  source: ContextLengthSource;
  /** Present for the fallback only; the host logs it once per model per process. */
  warning?: string;
}

export interface ResolveContextLengthInput {
  model: string;
  provider?: string;
  /** `model.context_length`. */
  explicitOverride?: number | null;
  /** The window the provider adapter reports for this exact model id, or a map of exact model id → window. */
  providerMetadata?: number | null | Readonly<Record<string, number>>;
  table?: ModelRegistryTable;
}

export function unknownWindowWarning(model: string): string {
  return `No context length known for model '${model}'; assuming 256,000 tokens. Set model.context_length to override.`;
}

function providerWindow(metadata: ResolveContextLengthInput['providerMetadata'], modelId: string): number | null {
  if (typeof metadata === 'number') return isPositiveInteger(metadata) ? metadata : null;
  if (metadata && typeof metadata === 'object' && Object.hasOwn(metadata, modelId)) {
    const value = metadata[modelId];
    return isPositiveInteger(value) ? value : null;
  }
  return null;
}

/** First rule that yields a value wins (SPEC §4.1). Throws `ModelNotAvailableError` for a non-alias `-900k` id. */
export function resolveContextLength(input: ResolveContextLengthInput): ContextLengthResolution {
  const alias = resolveModelAlias(input.model);
  if (isPositiveInteger(input.explicitOverride)) return { contextLength: input.explicitOverride, source: 'override' };
  if (alias.contextLength !== null) return { contextLength: alias.contextLength, source: 'alias' };
  const reported = providerWindow(input.providerMetadata, alias.sendAs);
  if (reported !== null) return { contextLength: reported, source: 'provider' };
  const registered = lookupContextLength(input.model, input.provider, input.table);
  if (registered !== null) return { contextLength: registered, source: 'registry' };
  return { contextLength: UNKNOWN_MODEL_WINDOW, source: 'fallback', warning: unknownWindowWarning(input.model) };
}

// ---------------------------------------------------------------------------------------------------------------
// Minimum window (SPEC §4.4).

export class ContextWindowTooSmallError extends Error {
  readonly model: string;
  readonly contextLength: number;
  constructor(model: string, contextLength: number) {
    super(
      `Model '${model}' has a context window of ${formatThousands(contextLength)} tokens; at least 64,000 are required. Choose a larger model or set model.context_length.`,
    );
    this.name = 'ContextWindowTooSmallError';
    this.model = model;
    this.contextLength = contextLength;
  }
}

/** Host check before starting or switching to a main model. The engine itself accepts any positive window. */
export function checkMinimumContextLength(model: string, contextLength: number): void {
  if (!(contextLength >= MINIMUM_CONTEXT_LENGTH)) throw new ContextWindowTooSmallError(model, contextLength);
}

/**
 * The window of a main model the host may use (SPEC §4.1, §4.3, §4.4): resolved, then checked against the 64,000
 * minimum. Throws ModelNotAvailableError or ContextWindowTooSmallError with the exact user-facing texts.
 */
export function resolveUsableContextLength(model: string, provider: string | null, explicit: number | null): number {
  const { contextLength } = resolveContextLength({
    model,
    provider: provider ?? undefined,
    explicitOverride: explicit,
  });
  checkMinimumContextLength(model, contextLength);
  return contextLength;
}

// ---------------------------------------------------------------------------------------------------------------
// Codex gpt-5.5 autoraise predicate (SPEC §4.5).

export const CODEX_OAUTH_PROVIDER = 'openai-codex';

/** The part after the last `/`, lower-cased, with a `-900k` suffix removed (SPEC §4.5). */
export function baseModelName(model: string): string {
  const lastSegment = String(model ?? '')
    .slice(String(model ?? '').lastIndexOf('/') + 1)
    .toLowerCase();
  return stripAliasSuffix(lastSegment);
}

export function codexAutoraiseApplies(
  model: string,
  provider: string | undefined,
  config: Pick<CompressionConfig, 'codexGpt55Autoraise'>,
): boolean {
  return provider === CODEX_OAUTH_PROVIDER && baseModelName(model) === 'gpt-5.5' && config.codexGpt55Autoraise === true;
}
