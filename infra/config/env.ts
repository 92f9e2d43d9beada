// The process environment, validated once (issue #10 item 5, DESIGN.md §2 `infra/config/`): every variable the entry
// points (workers/*.ts) and the CLI read, with its default, in one frozen object. A bad value fails start-up with an
// error naming the variable (`Invalid environment: GATEWAY_PORT: expected an integer port 0–65535, got "80a"`), or
// both variables of a contradiction (a client certificate without its key); an empty value counts as unset. Not here: the provider API keys (config.yaml names them, infra/llm/ reads them by
// name) and what only shell scripts read (TEMPORAL_CLI, TEMPORAL_CLI_VERSION, DURABLE_CONTEXT_CACHE: find-cli.sh).
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_PLUGIN_DIR } from '../plugins/pluginDir.js';
import { EnvError, type EnvProblem } from './envError.js';
import { HTTP_URL_PATTERN } from './fieldRules.js';
import { LIMIT_KEYS, NO_LIMITS, parseLimitsText, type RequestLimits } from './requestLimits.js';

export { EnvError, type EnvProblem } from './envError.js';

/** One variable: what a valid value looks like (the error text), its schema (on the non-empty text), its default. */
interface Variable<T> {
  expected: string;
  schema: z.ZodType<T>;
  fallback: T;
}

const MAX_PORT = 65_535;

const port = (fallback: number): Variable<number> => ({
  expected: `an integer port 0–${MAX_PORT} (0: a free port)`,
  schema: z
    .string()
    .regex(/^\d{1,5}$/)
    .transform(Number)
    .refine((value) => value <= MAX_PORT),
  fallback,
});

/** A whole number of `unit` from `min` to `max`. */
const count = (min: number, max: number, unit: string, fallback: number): Variable<number> => ({
  expected: `an integer ${min}–${max} (${unit})`,
  schema: z
    .string()
    .regex(new RegExp(`^\\d{1,${String(max).length}}$`))
    .transform(Number)
    .refine((value) => value >= min && value <= max),
  fallback,
});

/** A secret or a name used as is: any text without whitespace. */
const token = <T extends string | null>(expected: string, fallback: T): Variable<string | T> => ({
  expected,
  schema: z.string().regex(/^\S+$/),
  fallback,
});

/** The texts of an on/off variable (case-insensitive). */
const FLAGS: Readonly<Record<string, boolean>> = Object.freeze({
  '1': true,
  true: true,
  yes: true,
  on: true,
  '0': false,
  false: false,
  no: false,
  off: false,
});

/** An on/off variable. */
const flag = <T extends boolean | null>(fallback: T): Variable<boolean | T> => ({
  expected: '1, true, yes, on, 0, false, no or off',
  schema: z
    .string()
    .refine((text) => Object.hasOwn(FLAGS, text.toLowerCase()))
    .transform((text) => FLAGS[text.toLowerCase()] === true),
  fallback,
});

/** A file path (read where it is used: infra/temporal/connectionOptions.ts names the variable of an unreadable one). */
const filePath = (expected: string): Variable<string | null> => ({
  expected,
  schema: z.string().transform((path) => resolve(path)),
  fallback: null,
});

/** `host`, `host:port`, `[ipv6]` or `[ipv6]:port`, as the Temporal SDK accepts it (its default port: 7233). */
const HOST_PORT_PATTERN = /^(?:\[[0-9A-Fa-f.:]+\]|[^\s:/[\]]+)(?::(\d{1,5}))?$/;

/** A web origin as browsers send it: scheme, host, optional port; no path, no trailing slash. */
const ORIGIN_PATTERN = /^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** The checkout: `npm start` keeps its data in `<checkout>/.data` unless DURABLE_CONTEXT_DATA says otherwise. */
const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A process's write pool without DATABASE_POOL_SIZE: twice the machine's cores plus one, at most 10. On a machine
 * PostgreSQL shares, more connections than that only queue in its backends: `bench:load` on 2 cores accepted as many
 * messages with 5 as with 10 or 20, and status reads during the load took half as long.
 */
export const DEFAULT_POOL_SIZE = Math.min(10, 2 * availableParallelism() + 1);

const VARIABLES = {
  // PostgreSQL and config.yaml
  DATABASE_URL: {
    expected: 'a postgres:// or postgresql:// URL',
    schema: z.string().regex(/^postgres(?:ql)?:\/\/\S+$/),
    fallback: null,
  } satisfies Variable<string | null>,
  DATABASE_POOL_SIZE: count(1, 1000, 'connections', DEFAULT_POOL_SIZE),
  DURABLE_CONTEXT_CONFIG: {
    expected: 'a file path',
    schema: z.string(),
    fallback: null,
  } satisfies Variable<string | null>,
  DURABLE_CONTEXT_DATA: {
    expected: 'a directory path',
    schema: z.string().transform((path) => resolve(path)),
    fallback: resolve(CHECKOUT, '.data'),
  } satisfies Variable<string>,
  /** SPEC §10.3 step 1: where `plugins/context_engine/<name>/index.js` is looked for (infra/plugins/). */
  DURABLE_CONTEXT_PLUGIN_DIR: {
    expected: 'a directory path',
    schema: z.string().transform((path) => resolve(path)),
    fallback: DEFAULT_PLUGIN_DIR,
  } satisfies Variable<string>,
  // The worker
  /**
   * How long a stopping worker (SIGTERM/SIGINT) lets its running activities finish before it cancels them; a
   * cancelled activity is retried by another worker (a summary: its model call again).
   */
  WORKER_SHUTDOWN_GRACE_SECONDS: count(1, 3600, 'seconds', 5),
  // The gateway
  DURABLE_CONTEXT_ADMIN_KEY: token('a key without whitespace', null),
  DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: token('a key without whitespace', null),
  DURABLE_CONTEXT_METRICS_KEY: token('a key without whitespace', null),
  DURABLE_CONTEXT_DOCS_KEY: token('a key without whitespace', null),
  DURABLE_CONTEXT_CORS_ORIGINS: {
    expected: 'comma-separated origins (http(s)://host[:port], no path) or *',
    schema: z
      .string()
      .transform((text) => text.split(',').map((origin) => origin.trim()))
      .refine((origins) => origins.every((origin) => origin === '*' || ORIGIN_PATTERN.test(origin))),
    fallback: [],
  } satisfies Variable<string[]>,
  DURABLE_CONTEXT_LIMITS: {
    expected: `comma-separated key=integer ≥ 1 pairs of ${Object.keys(LIMIT_KEYS).join(', ')}`,
    schema: z
      .string()
      .transform((text) => parseLimitsText(text))
      .refine((limits) => limits !== null)
      .transform((limits) => limits as RequestLimits),
    fallback: NO_LIMITS,
  } satisfies Variable<RequestLimits>,
  /** Webhooks may go to loopback, private and link-local addresses (infra/http/webhookDestination.ts). */
  DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE: flag(false),
  GATEWAY_PORT: port(8080),
  GATEWAY_HOST: {
    expected: 'a host name or IP address',
    schema: z.string().regex(/^[A-Za-z0-9._:%-]+$/),
    fallback: '127.0.0.1',
  } satisfies Variable<string>,
  GATEWAY_BODY_LIMIT: {
    expected: 'a positive integer (bytes)',
    schema: z
      .string()
      .regex(/^\d+$/)
      .transform(Number)
      .refine((value) => value > 0 && Number.isSafeInteger(value)),
    fallback: 1024 * 1024,
  } satisfies Variable<number>,
  // Temporal
  TEMPORAL_ADDRESS: {
    expected: `host or host:port (port 1–${MAX_PORT})`,
    schema: z.string().refine((text) => {
      const match = HOST_PORT_PATTERN.exec(text);
      return match !== null && (match[1] === undefined || (Number(match[1]) >= 1 && Number(match[1]) <= MAX_PORT));
    }),
    fallback: '127.0.0.1:7233',
  } satisfies Variable<string>,
  TEMPORAL_NAMESPACE: token('a namespace name without whitespace', 'default'),
  TEMPORAL_API_KEY: token('an API key without whitespace', null),
  TEMPORAL_TLS: flag(null),
  TEMPORAL_TLS_CA: filePath('a file path (PEM CA certificate)'),
  TEMPORAL_TLS_CERT: filePath('a file path (PEM client certificate)'),
  TEMPORAL_TLS_KEY: filePath('a file path (PEM private key)'),
  TEMPORAL_TLS_SERVER_NAME: {
    expected: 'a host name',
    schema: z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/),
    fallback: null,
  } satisfies Variable<string | null>,
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  // The CLI (dctx)
  DCTX_URL: {
    expected: 'an http:// or https:// URL',
    schema: z.string().regex(HTTP_URL_PATTERN),
    fallback: 'http://127.0.0.1:8080',
  } satisfies Variable<string>,
  DCTX_KEY: token('a tenant API key without whitespace', null),
  DCTX_DEBUG: flag(false),
};

export type EnvName = keyof typeof VARIABLES;

/** The validated environment; `null` means unset (the caller's fallback applies, e.g. the embedded PostgreSQL). */
export type Env = {
  readonly [K in EnvName]: (typeof VARIABLES)[K]['fallback'] | z.output<(typeof VARIABLES)[K]['schema']>;
};

/** The names of the environment, in the order of README's table. */
export const ENV_NAMES = Object.freeze(Object.keys(VARIABLES) as EnvName[]);

/** Settings valid alone that contradict each other: each names both variables. */
function contradictions(values: Env): EnvProblem[] {
  const problems: EnvProblem[] = [];
  const pair = (a: EnvName, b: EnvName, text: string) =>
    problems.push({ names: [a, b], message: `Invalid environment: ${a} and ${b}: ${text}` });
  if ((values.TEMPORAL_TLS_CERT === null) !== (values.TEMPORAL_TLS_KEY === null)) {
    const [set, unset] =
      values.TEMPORAL_TLS_CERT === null
        ? (['TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CERT'] as const)
        : (['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY'] as const);
    pair(
      'TEMPORAL_TLS_CERT',
      'TEMPORAL_TLS_KEY',
      `a client certificate needs its private key: ${set} is set, ${unset} is not`,
    );
  }
  if (values.TEMPORAL_TLS === false) {
    for (const name of [
      'TEMPORAL_TLS_CA',
      'TEMPORAL_TLS_CERT',
      'TEMPORAL_TLS_KEY',
      'TEMPORAL_TLS_SERVER_NAME',
    ] as const) {
      if (values[name] !== null) pair('TEMPORAL_TLS', name, `TLS is switched off, but ${name} is set`);
    }
  }
  return problems;
}

/** Rules between variables, checked once each is valid on its own. */
function crossProblems(values: Record<string, unknown>): EnvProblem[] {
  const previous = values.DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS;
  if (previous === null || previous === undefined) return [];
  const name = 'DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS';
  if (values.DURABLE_CONTEXT_ADMIN_KEY === null) {
    return [
      {
        names: [name],
        message: `Invalid environment: ${name}: set without DURABLE_CONTEXT_ADMIN_KEY (the new admin key)`,
      },
    ];
  }
  if (previous === values.DURABLE_CONTEXT_ADMIN_KEY) {
    return [{ names: [name], message: `Invalid environment: ${name}: the same key as DURABLE_CONTEXT_ADMIN_KEY` }];
  }
  return [];
}

/** Validates `record` (e.g. `process.env`): a frozen `Env`, or an `EnvError` naming every bad variable. */
export function parseEnv(record: Readonly<Record<string, string | undefined>>): Env {
  const values: Record<string, unknown> = {};
  const problems: EnvProblem[] = [];
  for (const name of ENV_NAMES) {
    const variable: Variable<unknown> = VARIABLES[name];
    const raw = record[name];
    if (raw === undefined || raw === '') {
      values[name] = variable.fallback;
      continue;
    }
    const parsed = variable.schema.safeParse(raw);
    if (parsed.success) values[name] = parsed.data;
    else {
      const message = `Invalid environment: ${name}: expected ${variable.expected}, got ${JSON.stringify(raw)}`;
      problems.push({ names: [name], message });
    }
  }
  if (problems.length === 0) problems.push(...contradictions(values as Env), ...crossProblems(values));
  if (problems.length > 0) throw new EnvError(problems);
  return Object.freeze(values) as Env;
}

/** This process's environment, read once when the first entry point module loads. */
export const env: Env = parseEnv(process.env);
