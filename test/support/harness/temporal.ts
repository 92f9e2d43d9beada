// Per-test-file Temporal plumbing on the run's dev server (from the global setup): a worker on a unique task queue
// with injected dependencies (real PostgreSQL, a scriptable summarizer) and the project's ConversationClient.
import { inject } from 'vitest';
import { createStackAt, productWorkflowBundle, type StackAt, type StackAtOptions } from './stackAt.js';

export type TestStack = StackAt;

/** Bundles workflows/ once per test file (a few seconds on two cores). */
export const workflowBundle = productWorkflowBundle;

export function createTestStack(options: Omit<StackAtOptions, 'address' | 'namespace'>): Promise<TestStack> {
  return createStackAt({ ...options, address: inject('temporalAddress'), namespace: inject('temporalNamespace') });
}
