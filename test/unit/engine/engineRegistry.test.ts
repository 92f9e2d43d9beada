import { afterEach, describe, expect, it } from 'vitest';
import {
  ContextCompressor,
  type ContextEngine,
  registerContextEngine,
  resolveContextEngine,
  resolveContextEngineDetailed,
  setContextEngineWarningListener,
  unregisterContextEngine,
} from '../../../engine/index.js';

const options = { model: 'm', contextLength: 200_000, summarize: async () => 'x' };

function fakeEngine(name = 'mine'): ContextEngine {
  return {
    name,
    updateFromResponse() {},
    shouldCompress: () => false,
    compress: async (messages) => [...messages],
    updateModel() {},
    getStatus: () => ({
      last_prompt_tokens: 0,
      threshold_tokens: 1,
      context_length: 1,
      usage_percent: 0,
      compression_count: 0,
    }),
  };
}

afterEach(() => {
  for (const name of ['mine', 'broken', 'bogus']) unregisterContextEngine(name);
  setContextEngineWarningListener(null);
});

describe('engine registry (§10.3, §18.11)', () => {
  it('compressor, absent and empty names select the built-in engine without a warning', () => {
    for (const name of ['compressor', undefined, '']) {
      const r = resolveContextEngineDetailed(name, options);
      expect(r.engine).toBeInstanceOf(ContextCompressor);
      expect(r).toMatchObject({ source: 'builtin', warning: null });
    }
    expect(resolveContextEngine('compressor', options).name).toBe('compressor');
  });

  it("'compressor' is reserved", () => {
    expect(() => registerContextEngine('compressor', () => fakeEngine())).toThrow(
      "Context engine name 'compressor' is reserved for the built-in engine",
    );
  });

  it('names outside the context.engine pattern are rejected', () => {
    for (const bad of ['Mine', '-x', '../etc', 'a'.repeat(65), 'a b']) {
      expect(() => registerContextEngine(bad, () => fakeEngine())).toThrow();
    }
  });

  it('a registered name calls the factory with the constructor arguments; re-registering replaces', () => {
    const seen: unknown[] = [];
    registerContextEngine('mine', (...args) => {
      seen.push(args);
      return fakeEngine('first');
    });
    registerContextEngine('mine', (...args) => {
      seen.push(args);
      return fakeEngine('second');
    });
    expect(resolveContextEngine('mine', options, 'extra').name).toBe('second');
    expect(seen).toEqual([[options, 'extra']]);
  });

  it('registering never activates: other names still get the built-in engine', () => {
    registerContextEngine('mine', () => fakeEngine());
    expect(resolveContextEngine(undefined, options)).toBeInstanceOf(ContextCompressor);
  });

  it('unknown name → built-in with the not-found warning', () => {
    const warnings: string[] = [];
    setContextEngineWarningListener((w) => warnings.push(w));
    expect(resolveContextEngine('bogus', options)).toBeInstanceOf(ContextCompressor);
    expect(warnings).toEqual(["Context engine 'bogus' not found; using the built-in compressor."]);
  });

  it('a throwing factory or a non-engine result → built-in with the failed-to-load warning', () => {
    const warnings: string[] = [];
    setContextEngineWarningListener((w) => warnings.push(w));
    registerContextEngine('broken', () => {
      throw new Error('plugin crashed');
    });
    expect(resolveContextEngine('broken', options)).toBeInstanceOf(ContextCompressor);
    registerContextEngine('mine', () => ({ name: 'half' }) as unknown as ContextEngine);
    expect(resolveContextEngine('mine', options)).toBeInstanceOf(ContextCompressor);
    expect(warnings).toEqual([
      "Context engine 'broken' failed to load; using the built-in compressor.",
      "Context engine 'mine' failed to load; using the built-in compressor.",
    ]);
  });
});
