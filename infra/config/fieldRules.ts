// The machinery of the strict config.yaml validation (SPEC §2.1): one rule per key (its "Allowed" text and the zod
// schema that implements it), validated section by section with the exact error texts of `ConfigError`.
import { z } from 'zod';
import { ConfigError, type ValueCheck } from '../../engine/config.js';

export { HTTP_URL_PATTERN } from '../../contracts/validation.js';

export type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One validated key: the "Allowed" column text (§2.2, §2.3, §19) and the zod schema that implements it. */
export interface FieldRule<T> {
  allowed: string;
  schema: z.ZodType<T>;
}

/** A rule whose range is the engine's (engine/config.ts defines each range of §2.2 and §19 once). */
export function checkedRule<T>(allowed: string, check: ValueCheck): FieldRule<T> {
  return { allowed, schema: z.custom<T>((value) => check(value)) };
}

export function validateField<T>(dottedKey: string, rule: FieldRule<T>, value: unknown): T {
  const parsed = rule.schema.safeParse(value);
  if (!parsed.success) throw ConfigError.badValue(dottedKey, rule.allowed, value);
  return parsed.data;
}

/** An owned section: absent or `null` (an empty YAML section) is empty; anything else must be a mapping. */
export function sectionObject(dottedKey: string, value: unknown): PlainObject {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw ConfigError.badValue(dottedKey, 'mapping', value);
  return value;
}

/** The validated values of a section: only the keys present. */
export type SectionValues<R extends Record<string, FieldRule<unknown>>> = {
  [K in keyof R]?: R[K] extends FieldRule<infer T> ? T : never;
};

/** Validates the given fields of one owned section; unknown keys fail. Returns only the keys present. */
export function validateSection<R extends Record<string, FieldRule<unknown>>>(
  prefix: string,
  section: PlainObject,
  rules: R,
): SectionValues<R> {
  const out: Record<string, unknown> = {};
  for (const [snakeKey, value] of Object.entries(section)) {
    const dottedKey = `${prefix}.${snakeKey}`;
    const rule = Object.hasOwn(rules, snakeKey) ? rules[snakeKey] : undefined;
    if (!rule) throw ConfigError.unknownKey(dottedKey);
    if (value === undefined) continue;
    out[snakeKey] = validateField(dottedKey, rule, value);
  }
  return out as SectionValues<R>;
}
