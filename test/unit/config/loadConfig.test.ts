import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPRESSION_CONFIG, normalizeHostPolicy } from '../../../engine/config.js';
import { loadConfig, parseConfigText } from '../../../infra/config/loadConfig.js';
import {
  effectiveTenantPolicy,
  resolveTenantCompressionConfig,
  resolveTenantContextEngine,
  validateTenantPolicy,
} from '../../../infra/config/tenantPolicy.js';

describe('config.yaml loading', () => {
  it('an empty file gives the defaults', () => {
    const cfg = parseConfigText('');
    expect(cfg.compression).toEqual(DEFAULT_COMPRESSION_CONFIG);
    expect(cfg.promptCaching.cacheTtl).toBe('5m');
    expect(cfg.context.engine).toBe('compressor');
  });

  it('reads the owned sections and keeps the rest raw', () => {
    const cfg = parseConfigText(
      [
        'compression:',
        '  threshold: 0.6',
        '  model_thresholds: { "claude": 0.7 }',
        '  in_place: false',
        'prompt_caching:',
        '  cache_ttl: 1h',
        'providers:',
        '  openai: { base_url: "http://127.0.0.1:9" }',
      ].join('\n'),
    );
    expect(cfg.compression.threshold).toBe(0.6);
    expect(cfg.compression.modelThresholds).toEqual({ claude: 0.7 });
    expect(cfg.compression.inPlace).toBe(false);
    expect(cfg.promptCaching.cacheTtl).toBe('1h');
    expect(cfg.raw.providers).toEqual({ openai: { base_url: 'http://127.0.0.1:9' } });
  });

  it('fails start-up with the exact SPEC §2.1 messages', () => {
    expect(() => parseConfigText('compression:\n  treshold: 0.5\n')).toThrow(
      'Invalid configuration: compression.treshold: unknown key',
    );
    expect(() => parseConfigText('compression:\n  enabled: "yes"\n')).toThrow(
      'Invalid configuration: compression.enabled: expected boolean, got "yes"',
    );
    expect(() => parseConfigText('compression:\n  threshold: 1.5\n')).toThrow(
      'Invalid configuration: compression.threshold: expected number in (0, 1], got 1.5',
    );
  });

  it('reports YAML syntax errors as configuration errors', () => {
    expect(() => parseConfigText('compression: [unclosed', 'x.yaml')).toThrow(/^Invalid configuration: x.yaml: /);
  });

  it('loads a file from a path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dc-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'compression:\n  protect_last_n: 5\n');
    const cfg = loadConfig(file);
    expect(cfg.path).toBe(file);
    expect(cfg.compression.protectLastN).toBe(5);
  });
});

describe('tenant policy', () => {
  const base = parseConfigText('compression:\n  threshold: 0.6\n  model_thresholds: { "gpt": 0.7 }\n').compression;

  it('tenant override → config.yaml → default', () => {
    const cfg = resolveTenantCompressionConfig(base, { protect_last_n: 4, model_thresholds: { claude: 0.9 } });
    expect(cfg.protectLastN).toBe(4);
    expect(cfg.threshold).toBe(0.6);
    expect(cfg.modelThresholds).toEqual({ claude: 0.9 });
    expect(cfg.tailMode).toBe('lean');
  });

  it('an empty or missing policy changes nothing', () => {
    expect(resolveTenantCompressionConfig(base, {})).toEqual(base);
    expect(resolveTenantCompressionConfig(base, null)).toEqual(base);
  });

  it('is validated exactly like config.yaml', () => {
    expect(() => validateTenantPolicy({ treshold: 0.4 })).toThrow(
      'Invalid configuration: compression.treshold: unknown key',
    );
    expect(() => validateTenantPolicy({ in_place: 'no' })).toThrow(
      'Invalid configuration: compression.in_place: expected boolean, got "no"',
    );
  });

  it('context.engine (SPEC §10.3): a tenant names its engine; config.yaml’s applies otherwise', () => {
    expect(resolveTenantContextEngine('compressor', { context: { engine: 'archive-only' }, protect_last_n: 4 })).toBe(
      'archive-only',
    );
    expect(resolveTenantContextEngine('archive-only', { protect_last_n: 4 })).toBe('archive-only');
    expect(resolveTenantContextEngine('compressor', null)).toBe('compressor');
    // The context section is not a compression key: the compression configuration is unchanged by it.
    expect(resolveTenantCompressionConfig(base, { context: { engine: 'archive-only' } })).toEqual(base);
  });

  it('effectiveTenantPolicy: one validation for all three; a stored policy that no longer validates gives config.yaml’s, with the reason', () => {
    const host = normalizeHostPolicy({});
    const baseline = { config: base, host, engine: 'compressor' };
    const effective = effectiveTenantPolicy(baseline, {
      protect_last_n: 4,
      summary_backend: 'extractive',
      context: { engine: 'archive-only' },
    });
    expect(effective).toMatchObject({ engine: 'archive-only', invalid: null });
    expect(effective.config.protectLastN).toBe(4);
    expect(effective.host.summaryBackend).toBe('extractive');
    expect(effectiveTenantPolicy(baseline, { treshold: 0.4 })).toEqual({
      ...baseline,
      invalid: 'Invalid configuration: compression.treshold: unknown key',
    });
  });

  it('context.engine is validated like config.yaml’s, naming the key', () => {
    expect(() => validateTenantPolicy({ context: { engine: '../etc' } })).toThrow(
      'Invalid configuration: context.engine: expected string matching ^[a-z0-9][a-z0-9_-]{0,63}$, got "../etc"',
    );
    expect(() => validateTenantPolicy({ context: { engin: 'x' } })).toThrow(
      'Invalid configuration: context.engin: unknown key',
    );
    expect(() => validateTenantPolicy({ context: 'archive-only' })).toThrow(
      'Invalid configuration: context: expected mapping, got "archive-only"',
    );
  });
});
