// A worker + the Conversations facade (PostgreSQL log + Temporal client) on a Temporal server at a given address: the
// same plumbing as createTestStack (harness/temporal.ts), but without vitest's `inject`, so that test files with
// their own dev server (e.g. one with a small continue-as-new limit) and plain scripts (test/support/fixtures/histories/
// record.ts, bench/) can use it.
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  NativeConnection,
  type Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Kysely } from 'kysely';
import type { ActivityDeps } from '../../../activities/index.js';
import { respondDepsFrom } from '../../../activities/respond.js';
import { ConversationClient } from '../../../clients/conversationClient.js';
import { type CompressionConfig, normalizeCompressionConfig, type Summarizer } from '../../../engine/index.js';
import type { Database } from '../../../infra/db/schema.js';
import { chatProviderProblem } from '../../../infra/llm/providers.js';
import type { Metrics } from '../../../infra/metrics/registry.js';
import { Conversations, type ConversationsOptions } from '../../../workers/gateway/conversations.js';
import { createWorker, WORKFLOWS_PATH } from '../../../workers/runtime/createWorker.js';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

/** Bundles workflows/ once per process. */
export function productWorkflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  return bundle;
}

export interface StackAt {
  address: string;
  namespace: string;
  taskQueue: string;
  client: Conversations;
  temporal: ConversationClient;
  connection: Connection;
  /** Starts (or restarts) the worker, optionally with another summarizer. */
  startWorker(options?: { summarizer?: Summarizer | null }): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface StackAtOptions {
  address: string;
  namespace?: string;
  db: Kysely<Database>;
  baseConfig?: Partial<CompressionConfig>;
  summarizer?: Summarizer | null;
  taskQueue?: string;
  heartbeatIntervalMs?: number;
  metrics?: Metrics;
  /** Further activity dependencies (providers, per-model summarizer, cache TTL, env). */
  activityDeps?: Partial<ActivityDeps>;
  /** Options of the Conversations facade (wait bound, chat availability). */
  conversations?: ConversationsOptions;
  /** How long updates wait for the worker to accept them (default 10 s). */
  acceptWithinMs?: number;
}

export async function createStackAt(options: StackAtOptions): Promise<StackAt> {
  const { address } = options;
  const namespace = options.namespace ?? 'default';
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const temporal = new ConversationClient(connection, {
    namespace,
    taskQueue,
    ...(options.acceptWithinMs ? { acceptWithinMs: options.acceptWithinMs } : {}),
  });
  // Chat availability as the gateway checks it in production (no provider or key: refused before anything is stored).
  const client = new Conversations(options.db, temporal, {
    baseConfig: normalizeCompressionConfig(options.baseConfig ?? {}),
    chatProblem: (provider) =>
      chatProviderProblem(options.activityDeps?.providers ?? null, provider, options.activityDeps?.env ?? process.env),
    // Quiet chat turns run in the gateway, as in production (workers/gateway/chatTurns.ts).
    ...(options.activityDeps?.providers ? { turns: respondDepsFrom(options.activityDeps) } : {}),
    ...options.conversations,
  });
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
      workflowBundle: await productWorkflowBundle(),
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 500,
      shutdownGraceTime: '1 second',
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...options.activityDeps,
    });
    running = { worker, done: worker.run() };
  };

  await startWorker();
  return {
    address,
    namespace,
    taskQueue,
    client,
    temporal,
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
