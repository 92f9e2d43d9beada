// Per-test-file Temporal plumbing on the run's dev server (from the global setup): a worker on a unique task queue
// with injected dependencies (real PostgreSQL, a scriptable summarizer) and the project's ConversationClient.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { startWorkerProcess, type WorkerProcess } from './spawnWorker.js';
import { createStackAt, productWorkflowBundle, type StackAt, type StackAtOptions } from './stackAt.js';

export type TestStack = StackAt;

/** Bundles workflows/ once per test file (a few seconds on two cores). */
export const workflowBundle = productWorkflowBundle;

export function createTestStack(options: Omit<StackAtOptions, 'address' | 'namespace'>): Promise<TestStack> {
  return createStackAt({ ...options, address: inject('temporalAddress'), namespace: inject('temporalNamespace') });
}

/**
 * Stops the stack's in-process worker and starts a worker process (one a test can SIGKILL) on the same task queue,
 * server and database, with kill hooks or further environment in `env` (harness/workerProcess.ts). The process runs
 * the product's workflow bundle from a temporary file, removed when the process is killed.
 */
export async function workerProcessFor(
  stack: TestStack,
  databaseUrl: string,
  env: Record<string, string>,
): Promise<WorkerProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'dc-bundle-'));
  const bundlePath = join(dir, 'bundle.js');
  await writeFile(bundlePath, (await workflowBundle()).code);
  await stack.stopWorker();
  const proc = startWorkerProcess({
    databaseUrl,
    temporalAddress: inject('temporalAddress'),
    temporalNamespace: inject('temporalNamespace'),
    taskQueue: stack.taskQueue,
    bundlePath,
    env,
  });
  return {
    ...proc,
    kill: async () => {
      const how = await proc.kill();
      await rm(dir, { recursive: true, force: true });
      return how;
    },
  };
}
