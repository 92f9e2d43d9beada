import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';

const workflowsPath = fileURLToPath(new URL('../../support/fixtures/workflows/engine-bundle.ts', import.meta.url));

describe('engine/ in Temporal workflow code', () => {
  it('bundles with the workflow bundler (which rejects disallowed Node modules)', async () => {
    const warnings: string[] = [];
    const logger = {
      log: () => {},
      trace: () => {},
      debug: () => {},
      info: () => {},
      warn: (message: string) => warnings.push(message),
      error: (message: string) => warnings.push(message),
    };
    const { code } = await bundleWorkflowCode({ workflowsPath, logger });
    expect(code.length).toBeGreaterThan(10_000);
    expect(code).toContain('engineBundleWorkflow');
    expect(code).toContain('[CONTEXT COMPACTION]');
    expect(warnings).toEqual([]);
  });
});
