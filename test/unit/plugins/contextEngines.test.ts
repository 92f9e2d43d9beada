// SPEC §10.3 resolution as the host runs it (infra/plugins/contextEngines.ts): plugin directory → registry → the
// built-in compressor with the §10.3 line; a plugin that fails to load in any way falls back with "failed to load".
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ContextCompressor,
  type ContextCompressorOptions,
  registerContextEngine,
  unregisterContextEngine,
} from '../../../engine/index.js';
import {
  DEFAULT_PLUGIN_DIR,
  describeContextEngine,
  loadContextEngine,
  locateContextEngine,
} from '../../../infra/plugins/contextEngines.js';

const options: ContextCompressorOptions = {
  model: 'acme-chat',
  contextLength: 100_000,
  summarize: async () => 'body',
};

let dir: string;
function plugin(name: string, source: string): void {
  mkdirSync(join(dir, name));
  writeFileSync(join(dir, name, 'index.js'), source);
}

const ENGINE = `({ name: 'custom', shouldCompress: () => false, compress: async (m) => m, seen: args })`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'dc-plugin-unit-'));
  plugin('good', `export default (args) => ${ENGINE};`);
  plugin('throws-on-import', `throw new Error('broken module');`);
  plugin('no-default', `export const factory = (args) => ${ENGINE};`);
  plugin('factory-throws', `export default () => { throw new Error('no'); };`);
  plugin('not-an-engine', `export default () => ({ name: 'half' });`);
  plugin(
    'both',
    `export default (args) => ({ name: 'from-directory', shouldCompress: () => false, compress: async (m) => m });`,
  );
  mkdirSync(join(dir, 'no-entry'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  unregisterContextEngine('registered');
  unregisterContextEngine('both');
});

describe('loadContextEngine', () => {
  it('a plugin directory: its default-exported factory gets the built-in engine’s constructor arguments', async () => {
    const loaded = await loadContextEngine('good', options, dir);
    expect(loaded.origin).toBe('plugin');
    expect(loaded.warning).toBeNull();
    expect(loaded.engine.name).toBe('custom');
    expect((loaded.engine as unknown as { seen: unknown }).seen).toBe(options);
  });

  it('the directory wins over a registered engine of the same name', async () => {
    registerContextEngine('both', () => new ContextCompressor(options));
    const loaded = await loadContextEngine('both', options, dir);
    expect(loaded).toMatchObject({ origin: 'plugin', warning: null });
    expect(loaded.engine.name).toBe('from-directory');
  });

  it('no directory: a registered engine', async () => {
    registerContextEngine('registered', () => ({
      name: 'registered',
      shouldCompress: () => true,
      compress: async (m) => [...m],
      updateFromResponse() {},
      updateModel() {},
      getStatus: () => ({
        last_prompt_tokens: 0,
        threshold_tokens: 0,
        context_length: 0,
        usage_percent: 0,
        compression_count: 0,
      }),
    }));
    const loaded = await loadContextEngine('registered', options, dir);
    expect(loaded).toMatchObject({ origin: 'registry', warning: null });
    expect(loaded.engine.name).toBe('registered');
  });

  it('neither: the built-in compressor with the not-found line', async () => {
    const loaded = await loadContextEngine('missing', options, dir);
    expect(loaded.origin).toBe('builtin');
    expect(loaded.engine).toBeInstanceOf(ContextCompressor);
    expect(loaded.warning).toBe("Context engine 'missing' not found; using the built-in compressor.");
  });

  it.each(['throws-on-import', 'no-default', 'factory-throws', 'not-an-engine', 'no-entry'])(
    '%s: the built-in compressor with the failed-to-load line',
    async (name) => {
      const loaded = await loadContextEngine(name, options, dir);
      expect(loaded.origin).toBe('builtin');
      expect(loaded.engine).toBeInstanceOf(ContextCompressor);
      expect(loaded.warning).toBe(`Context engine '${name}' failed to load; using the built-in compressor.`);
    },
  );

  it.each([undefined, null, '', 'compressor'])('%j selects the built-in engine without a line', async (name) => {
    const loaded = await loadContextEngine(name, options, dir);
    expect(loaded).toMatchObject({ origin: 'builtin', warning: null });
    expect(loaded.engine).toBeInstanceOf(ContextCompressor);
  });

  it('a name outside the pattern never reaches the file system (no escape from the plugin directory)', async () => {
    const loaded = await loadContextEngine('../good', options, join(dir, 'no-entry'));
    expect(loaded.origin).toBe('builtin');
    expect(loaded.warning).toBe("Context engine '../good' not found; using the built-in compressor.");
  });
});

describe('locateContextEngine: where a name would come from, nothing built', () => {
  it('a plugin directory (even one that does not load), a registration, the built-in names, or nowhere', () => {
    registerContextEngine('registered-only', () => {
      throw new Error('never built');
    });
    try {
      expect(locateContextEngine('good', dir)).toBe('plugin');
      expect(locateContextEngine('throws-on-import', dir)).toBe('plugin');
      expect(locateContextEngine('registered-only', dir)).toBe('registry');
      expect(locateContextEngine('missing', dir)).toBeNull();
      expect(locateContextEngine('../good', join(dir, 'no-entry'))).toBeNull();
      for (const name of [undefined, null, '', 'compressor']) expect(locateContextEngine(name, dir)).toBe('builtin');
    } finally {
      unregisterContextEngine('registered-only');
    }
  });
});

describe('describeContextEngine (the worker’s start-up line)', () => {
  it('names the shipped archive-only plugin in the checkout’s plugins/context_engine/', async () => {
    expect(DEFAULT_PLUGIN_DIR.endsWith(join('plugins', 'context_engine'))).toBe(true);
    expect(await describeContextEngine('archive-only')).toBe(
      `Context engine 'archive-only': the plugin in ${join(DEFAULT_PLUGIN_DIR, 'archive-only')} (context.engine).`,
    );
  });

  it('the built-in engine, and the §10.3 lines', async () => {
    expect(await describeContextEngine('compressor')).toBe('Context engine: the built-in compressor (context.engine).');
    expect(await describeContextEngine('missing', dir)).toBe(
      "Context engine 'missing' not found; using the built-in compressor.",
    );
    expect(await describeContextEngine('no-default', dir)).toBe(
      "Context engine 'no-default' failed to load; using the built-in compressor.",
    );
  });
});
