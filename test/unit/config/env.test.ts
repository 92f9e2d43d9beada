import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POOL_SIZE, ENV_NAMES, type Env, EnvError, env, parseEnv } from '../../../infra/config/env.js';
import { NO_LIMITS } from '../../../infra/config/requestLimits.js';

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));

const DEFAULTS: Env = {
  DATABASE_URL: null,
  DATABASE_POOL_SIZE: Math.min(10, 2 * availableParallelism() + 1),
  DURABLE_CONTEXT_CONFIG: null,
  DURABLE_CONTEXT_DATA: resolve(CHECKOUT, '.data'),
  DURABLE_CONTEXT_PLUGIN_DIR: resolve(CHECKOUT, 'plugins', 'context_engine'),
  WORKER_SHUTDOWN_GRACE_SECONDS: 5,
  DURABLE_CONTEXT_ADMIN_KEY: null,
  DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: null,
  DURABLE_CONTEXT_METRICS_KEY: null,
  DURABLE_CONTEXT_DOCS_KEY: null,
  DURABLE_CONTEXT_CORS_ORIGINS: [],
  DURABLE_CONTEXT_LIMITS: NO_LIMITS,
  DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE: false,
  GATEWAY_PORT: 8080,
  GATEWAY_HOST: '127.0.0.1',
  GATEWAY_BODY_LIMIT: 1024 * 1024,
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  TEMPORAL_NAMESPACE: 'default',
  TEMPORAL_API_KEY: null,
  TEMPORAL_TLS: null,
  TEMPORAL_TLS_CA: null,
  TEMPORAL_TLS_CERT: null,
  TEMPORAL_TLS_KEY: null,
  TEMPORAL_TLS_SERVER_NAME: null,
  TEMPORAL_PORT: 7233,
  TEMPORAL_UI_PORT: 8233,
  DCTX_URL: 'http://127.0.0.1:8080',
  DCTX_KEY: null,
  DCTX_DEBUG: false,
};

/** Runs parseEnv and returns the EnvError it throws. */
function envError(record: Record<string, string>): EnvError {
  try {
    parseEnv(record);
  } catch (error) {
    expect(error).toBeInstanceOf(EnvError);
    return error as EnvError;
  }
  throw new Error('expected an EnvError');
}

describe('parseEnv: defaults', () => {
  it('gives every default for an empty environment', () => {
    expect(parseEnv({})).toEqual(DEFAULTS);
    expect(Object.keys(parseEnv({}))).toEqual(Object.keys(DEFAULTS));
  });

  it('treats an empty value as unset', () => {
    expect(parseEnv(Object.fromEntries(ENV_NAMES.map((name) => [name, ''])))).toEqual(DEFAULTS);
  });

  it('ignores variables it does not define (provider API keys are read by name elsewhere)', () => {
    expect(parseEnv({ OPENAI_API_KEY: 'sk-x', PATH: '/usr/bin', TEMPORAL_CLI: '/x' })).toEqual(DEFAULTS);
  });

  it('is frozen, and `env` is this process environment', () => {
    expect(Object.isFrozen(parseEnv({}))).toBe(true);
    expect(Object.isFrozen(env)).toBe(true);
    expect(env).toEqual(parseEnv(process.env));
  });
});

describe('parseEnv: valid values', () => {
  it('reads every variable', () => {
    const parsed = parseEnv({
      DATABASE_URL: 'postgres://durable:pw@127.0.0.1:5432/durable_context',
      DATABASE_POOL_SIZE: '24',
      DURABLE_CONTEXT_CONFIG: 'conf/config.yaml',
      DURABLE_CONTEXT_DATA: '/var/lib/dc',
      DURABLE_CONTEXT_PLUGIN_DIR: 'my-plugins',
      WORKER_SHUTDOWN_GRACE_SECONDS: '25',
      DURABLE_CONTEXT_ADMIN_KEY: 'admin_abc',
      DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: 'admin_old',
      DURABLE_CONTEXT_METRICS_KEY: 'metrics_abc',
      DURABLE_CONTEXT_DOCS_KEY: 'docs_abc',
      DURABLE_CONTEXT_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,http://[::1]:3000',
      DURABLE_CONTEXT_LIMITS: 'requests_per_minute=600, max_concurrent=32,key_requests_per_minute=120',
      GATEWAY_PORT: '0',
      GATEWAY_HOST: '::',
      GATEWAY_BODY_LIMIT: '2048',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'prod-eu',
      TEMPORAL_API_KEY: 'eyJhbGciOi.x_y-z',
      TEMPORAL_TLS: 'on',
      TEMPORAL_TLS_CA: '/etc/temporal/ca.pem',
      TEMPORAL_TLS_CERT: 'certs/client.pem',
      TEMPORAL_TLS_KEY: '/etc/temporal/client.key',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_PORT: '65535',
      TEMPORAL_UI_PORT: '18233',
      DCTX_URL: 'https://dc.example.com/base',
      DCTX_KEY: 'dctx_abc',
      DCTX_DEBUG: 'TRUE',
      DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE: 'on',
    });
    expect(parsed).toEqual({
      DATABASE_URL: 'postgres://durable:pw@127.0.0.1:5432/durable_context',
      DATABASE_POOL_SIZE: 24,
      DURABLE_CONTEXT_CONFIG: 'conf/config.yaml',
      DURABLE_CONTEXT_DATA: '/var/lib/dc',
      DURABLE_CONTEXT_PLUGIN_DIR: resolve('my-plugins'),
      WORKER_SHUTDOWN_GRACE_SECONDS: 25,
      DURABLE_CONTEXT_ADMIN_KEY: 'admin_abc',
      DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: 'admin_old',
      DURABLE_CONTEXT_METRICS_KEY: 'metrics_abc',
      DURABLE_CONTEXT_DOCS_KEY: 'docs_abc',
      DURABLE_CONTEXT_CORS_ORIGINS: ['https://app.example.com', 'http://localhost:5173', 'http://[::1]:3000'],
      DURABLE_CONTEXT_LIMITS: { ...NO_LIMITS, requestsPerMinute: 600, maxConcurrent: 32, keyRequestsPerMinute: 120 },
      DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE: true,
      GATEWAY_PORT: 0,
      GATEWAY_HOST: '::',
      GATEWAY_BODY_LIMIT: 2048,
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'prod-eu',
      TEMPORAL_API_KEY: 'eyJhbGciOi.x_y-z',
      TEMPORAL_TLS: true,
      TEMPORAL_TLS_CA: '/etc/temporal/ca.pem',
      TEMPORAL_TLS_CERT: resolve('certs/client.pem'),
      TEMPORAL_TLS_KEY: '/etc/temporal/client.key',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_PORT: 65535,
      TEMPORAL_UI_PORT: 18233,
      DCTX_URL: 'https://dc.example.com/base',
      DCTX_KEY: 'dctx_abc',
      DCTX_DEBUG: true,
    });
  });

  it('resolves a relative data directory against the working directory', () => {
    expect(parseEnv({ DURABLE_CONTEXT_DATA: 'my-data' }).DURABLE_CONTEXT_DATA).toBe(resolve('my-data'));
  });

  it.each(['127.0.0.1', 'localhost:7233', '[::1]:7233', '[::1]', 'ns.acct.tmprl.cloud:7233'])(
    'TEMPORAL_ADDRESS %s',
    (address) => {
      expect(parseEnv({ TEMPORAL_ADDRESS: address }).TEMPORAL_ADDRESS).toBe(address);
    },
  );

  it.each([
    ['1', true],
    ['yes', true],
    ['On', true],
    ['0', false],
    ['false', false],
    ['NO', false],
    ['off', false],
  ])('DCTX_DEBUG %s → %s', (text, flag) => {
    expect(parseEnv({ DCTX_DEBUG: text }).DCTX_DEBUG).toBe(flag);
    const webhooks = parseEnv({ DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE: text });
    expect(webhooks.DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE).toBe(flag);
  });

  it('a write pool of twice the cores plus one by default, at most 10; any size from 1 to 1000 when set', () => {
    expect(DEFAULT_POOL_SIZE).toBe(Math.min(10, 2 * availableParallelism() + 1));
    expect(DEFAULT_POOL_SIZE).toBeGreaterThanOrEqual(3);
    expect(parseEnv({ DATABASE_POOL_SIZE: '1' }).DATABASE_POOL_SIZE).toBe(1);
    expect(parseEnv({ DATABASE_POOL_SIZE: '1000' }).DATABASE_POOL_SIZE).toBe(1000);
  });

  it("a stopping worker's grace for running activities: any whole number of seconds from 1 to 3600", () => {
    expect(parseEnv({ WORKER_SHUTDOWN_GRACE_SECONDS: '1' }).WORKER_SHUTDOWN_GRACE_SECONDS).toBe(1);
    expect(parseEnv({ WORKER_SHUTDOWN_GRACE_SECONDS: '3600' }).WORKER_SHUTDOWN_GRACE_SECONDS).toBe(3600);
  });

  it('accepts postgresql:// as well', () => {
    expect(parseEnv({ DATABASE_URL: 'postgresql://h/db' }).DATABASE_URL).toBe('postgresql://h/db');
  });
});

describe('parseEnv: a bad value names the variable and the expectation', () => {
  it.each([
    ['GATEWAY_PORT', '80a', 'an integer port 0–65535 (0: a free port)'],
    ['GATEWAY_PORT', '65536', 'an integer port 0–65535 (0: a free port)'],
    ['GATEWAY_PORT', '-1', 'an integer port 0–65535 (0: a free port)'],
    ['GATEWAY_PORT', ' 8080', 'an integer port 0–65535 (0: a free port)'],
    ['TEMPORAL_PORT', '7233.5', 'an integer port 0–65535 (0: a free port)'],
    ['TEMPORAL_UI_PORT', 'ui', 'an integer port 0–65535 (0: a free port)'],
    ['GATEWAY_BODY_LIMIT', '0', 'a positive integer (bytes)'],
    ['GATEWAY_BODY_LIMIT', '1mb', 'a positive integer (bytes)'],
    ['GATEWAY_HOST', 'http://localhost', 'a host name or IP address'],
    ['TEMPORAL_ADDRESS', 'localhost:port', 'host or host:port (port 1–65535)'],
    ['TEMPORAL_ADDRESS', 'localhost:0', 'host or host:port (port 1–65535)'],
    ['TEMPORAL_ADDRESS', 'http://localhost:7233', 'host or host:port (port 1–65535)'],
    ['TEMPORAL_NAMESPACE', 'my namespace', 'a namespace name without whitespace'],
    ['DATABASE_POOL_SIZE', '0', 'an integer 1–1000 (connections)'],
    ['DATABASE_POOL_SIZE', '1001', 'an integer 1–1000 (connections)'],
    ['DATABASE_POOL_SIZE', '5.5', 'an integer 1–1000 (connections)'],
    ['DATABASE_POOL_SIZE', 'ten', 'an integer 1–1000 (connections)'],
    ['WORKER_SHUTDOWN_GRACE_SECONDS', '0', 'an integer 1–3600 (seconds)'],
    ['WORKER_SHUTDOWN_GRACE_SECONDS', '3601', 'an integer 1–3600 (seconds)'],
    ['WORKER_SHUTDOWN_GRACE_SECONDS', '2.5', 'an integer 1–3600 (seconds)'],
    ['DATABASE_URL', 'mysql://h/db', 'a postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'localhost', 'a postgres:// or postgresql:// URL'],
    ['DURABLE_CONTEXT_ADMIN_KEY', 'two words', 'a key without whitespace'],
    ['DURABLE_CONTEXT_METRICS_KEY', 'key\n', 'a key without whitespace'],
    ['DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS', 'old key', 'a key without whitespace'],
    ['DURABLE_CONTEXT_DOCS_KEY', 'docs key', 'a key without whitespace'],
    ...['requests_per_minute=0', 'rate=5', 'burst=2,burst=3', 'max_concurrent=x', 'burst=9999999999'].map(
      (limits) =>
        [
          'DURABLE_CONTEXT_LIMITS',
          limits,
          'comma-separated key=integer ≥ 1 pairs of requests_per_minute, burst, max_concurrent, ' +
            'key_requests_per_minute, key_burst',
        ] as [string, string, string],
    ),
    ...['https://app.example.com/', 'app.example.com', 'https://a.example.com,', 'ftp://x'].map(
      (origins) =>
        ['DURABLE_CONTEXT_CORS_ORIGINS', origins, 'comma-separated origins (http(s)://host[:port], no path) or *'] as [
          string,
          string,
          string,
        ],
    ),
    ['DCTX_URL', '127.0.0.1:8080', 'an http:// or https:// URL'],
    ['DCTX_KEY', 'dctx abc', 'a tenant API key without whitespace'],
    ['DCTX_DEBUG', 'maybe', '1, true, yes, on, 0, false, no or off'],
    ['TEMPORAL_TLS', 'tls', '1, true, yes, on, 0, false, no or off'],
    ['TEMPORAL_API_KEY', 'Bearer abc', 'an API key without whitespace'],
    ['TEMPORAL_TLS_SERVER_NAME', 'https://temporal.internal', 'a host name'],
    ['TEMPORAL_TLS_SERVER_NAME', 'temporal.internal.', 'a host name'],
  ])('%s = %j', (name, value, expected) => {
    const error = envError({ [name]: value });
    expect(error.message).toBe(`Invalid environment: ${name}: expected ${expected}, got ${JSON.stringify(value)}`);
    expect(error.variables).toEqual([name]);
    expect(error.name).toBe('EnvError');
  });

  it('reports every bad variable at once, one line each', () => {
    const error = envError({ GATEWAY_PORT: '80a', TEMPORAL_PORT: 'x', GATEWAY_HOST: 'ok' });
    expect(error.variables).toEqual(['GATEWAY_PORT', 'TEMPORAL_PORT']);
    expect(error.message.split('\n')).toEqual([
      'Invalid environment: GATEWAY_PORT: expected an integer port 0–65535 (0: a free port), got "80a"',
      'Invalid environment: TEMPORAL_PORT: expected an integer port 0–65535 (0: a free port), got "x"',
    ]);
  });
});

describe('parseEnv: rules between variables', () => {
  it('the previous admin key needs the new one, and must differ from it', () => {
    const alone = envError({ DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: 'admin_old' });
    expect(alone.variables).toEqual(['DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS']);
    expect(alone.message).toBe(
      'Invalid environment: DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: set without DURABLE_CONTEXT_ADMIN_KEY (the new admin key)',
    );
    const same = envError({ DURABLE_CONTEXT_ADMIN_KEY: 'admin_x', DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: 'admin_x' });
    expect(same.message).toBe(
      'Invalid environment: DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS: the same key as DURABLE_CONTEXT_ADMIN_KEY',
    );
  });
});

describe('parseEnv: Temporal TLS settings that contradict each other name both variables', () => {
  it.each([
    [{ TEMPORAL_TLS_CERT: 'c.pem' }, 'TEMPORAL_TLS_CERT is set, TEMPORAL_TLS_KEY is not'],
    [{ TEMPORAL_TLS_KEY: 'c.key' }, 'TEMPORAL_TLS_KEY is set, TEMPORAL_TLS_CERT is not'],
  ])('a client certificate without its key (%j)', (record, detail) => {
    const error = envError(record);
    expect(error.message).toBe(
      `Invalid environment: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY: a client certificate needs its private key: ${detail}`,
    );
    expect(error.variables).toEqual(['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY']);
  });

  it('TEMPORAL_TLS=false beside a TLS file or server name', () => {
    const error = envError({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA: 'ca.pem', TEMPORAL_TLS_SERVER_NAME: 'x.test' });
    expect(error.message.split('\n')).toEqual([
      'Invalid environment: TEMPORAL_TLS and TEMPORAL_TLS_CA: TLS is switched off, but TEMPORAL_TLS_CA is set',
      'Invalid environment: TEMPORAL_TLS and TEMPORAL_TLS_SERVER_NAME: TLS is switched off, but TEMPORAL_TLS_SERVER_NAME is set',
    ]);
    expect(error.variables).toEqual(['TEMPORAL_TLS', 'TEMPORAL_TLS_CA', 'TEMPORAL_TLS', 'TEMPORAL_TLS_SERVER_NAME']);
  });

  it('TEMPORAL_TLS=false with an API key is allowed (a local proxy that terminates TLS)', () => {
    expect(parseEnv({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toMatchObject({
      TEMPORAL_TLS: false,
      TEMPORAL_API_KEY: 'k',
    });
  });

  it('a bad value is reported alone, before any contradiction', () => {
    const error = envError({ TEMPORAL_TLS: 'nope', TEMPORAL_TLS_CERT: 'c.pem' });
    expect(error.variables).toEqual(['TEMPORAL_TLS']);
  });
});

describe('README', () => {
  it('documents exactly the variables of the environment object, in its order', () => {
    const readme = readFileSync(resolve(CHECKOUT, 'README.md'), 'utf8');
    const rows = readme.split('\n').filter((line) => /^\| `[A-Z][A-Z0-9_]+` /.test(line));
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)`/.exec(row)?.[1])).toEqual([...ENV_NAMES]);
  });
});
