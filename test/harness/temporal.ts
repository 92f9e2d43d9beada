// Per-test-file Temporal plumbing: one workflow bundle, a worker on a unique task queue with injected
// dependencies (real PostgreSQL, a scriptable summarizer), and the project's ConversationClient.
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  NativeConnection,
  type Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Kysely } from 'kysely';
import { inject } from 'vitest';
import type { ActivityDeps } from '../../activities/index.js';
import { type CompressionConfig, normalizeCompressionConfig, type Summarizer } from '../../engine/index.js';
import type { Database } from '../../infra/db/schema.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import { ConversationClient } from '../../infra/temporal/conversationClient.js';
import { createWorker, WORKFLOWS_PATH } from '../../workers/createWorker.js';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Bundles workflows/ once per test file (a few seconds on two cores). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  return bundle;
}

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export interface TestStack {
  taskQueue: string;
  client: ConversationClient;
  connection: Connection;
  /** Starts (or restarts) the worker with this summarizer. */
  startWorker(options?: { summarizer?: Summarizer | null }): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export async function createTestStack(options: {
  db: Kysely<Database>;
  baseConfig?: Partial<CompressionConfig>;
  summarizer?: Summarizer | null;
  metrics?: Metrics;
  /** Further activity dependencies (providers, per-model summarizer, cache TTL, env). */
  activityDeps?: Partial<ActivityDeps>;
}): Promise<TestStack> {
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const taskQueue = `test-${randomUUID()}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const client = new ConversationClient(connection, { namespace, taskQueue });
  let running: { worker: Worker; done: Promise<void> } | undefined;

  const stopWorker = async () => {
    if (!running) return;
    const { worker, done } = running;
    running = undefined;
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await done;
  };

  const startWorker = async (opts: { summarizer?: Summarizer | null } = {}) => {
    await stopWorker();
    const worker = await createWorker({
      connection: nativeConnection,
      namespace,
      taskQueue,
      db: options.db,
      baseConfig: normalizeCompressionConfig(options.baseConfig),
      summarizer: opts.summarizer === undefined ? (options.summarizer ?? null) : opts.summarizer,
      workflowBundle: await workflowBundle(),
      heartbeatIntervalMs: 500,
      shutdownGraceTime: '1 second',
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...options.activityDeps,
    });
    running = { worker, done: worker.run() };
  };

  await startWorker();
  return {
    taskQueue,
    client,
    connection,
    startWorker,
    stopWorker,
    close: async () => {
      await stopWorker();
      await connection.close();
      await nativeConnection.close();
    },
  };
}
