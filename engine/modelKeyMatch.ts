// Model-key matching shared by `model_thresholds` (SPEC §5.2) and the model registry (§4.2).

/** A parsed key: `provider:substring` is scoped (split at the first `:`); anything else is unscoped. */
interface ParsedKey {
  scope: string | null;
  sub: string;
}

/** SPEC §5.2 step 3, §18.12: an empty provider part (`:abc`) is an unscoped key whose substring keeps the colon. */
export function parseModelKey(key: string): ParsedKey {
  const colon = key.indexOf(':');
  if (colon > 0) return { scope: key.slice(0, colon).toLowerCase(), sub: key.slice(colon + 1).toLowerCase() };
  return { scope: null, sub: key.toLowerCase() };
}

function codePointLength(text: string): number {
  let length = 0;
  for (const _ of text) length++;
  return length;
}

export interface KeyMatch<T> {
  key: string;
  value: T;
}

/**
 * Best entry for a model (SPEC §5.2 steps 2–4): the longest matching substring wins; on equal length a scoped entry
 * beats an unscoped one; still equal, the earlier entry wins. Entries whose value fails `accept` are ignored.
 */
export function findBestKeyMatch<T>(
  model: string,
  provider: string | undefined,
  entries: Iterable<readonly [string, T]>,
  accept: (value: T) => boolean = () => true,
): KeyMatch<T> | undefined {
  if (typeof model !== 'string' || model === '') return undefined;
  const lowerModel = model.toLowerCase();
  const lowerProvider = typeof provider === 'string' ? provider.toLowerCase() : '';
  let best: { match: KeyMatch<T>; length: number; scoped: boolean } | undefined;
  for (const [key, value] of entries) {
    if (typeof key !== 'string' || !accept(value)) continue;
    const { scope, sub } = parseModelKey(key);
    if (scope !== null && scope !== lowerProvider) continue;
    if (sub === '' || !lowerModel.includes(sub)) continue;
    const length = codePointLength(sub);
    const scoped = scope !== null;
    if (!best || length > best.length || (length === best.length && scoped && !best.scoped)) {
      best = { match: { key, value }, length, scoped };
    }
  }
  return best?.match;
}
