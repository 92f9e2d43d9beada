// Builds the Temporal worker of the `conversations` task queue: the workflows of workflows/ and the activities of
// activities/ with their injected dependencies. Used by workers/worker.ts, the dev runner and the tests.
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../../activities/index.js';
import { type Metrics, timeActivities } from '../../infra/metrics/registry.js';
import { CONVERSATIONS_TASK_QUEUE } from '../../workflows/ids.js';
import { bundleWorkflowsInThread } from './workflowBundle.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/**
 * After a crash, the workflow tasks of the dead worker's sticky queue move to the shared queue after this long (SDK
 * default 10 s); it counts once per workflow of the interrupted work in the recovery time (issue #9 §5, measured by
 * `npm run bench:recovery`). Shorter still would make a busy worker lose its cache more often.
 */
export const STICKY_QUEUE_TIMEOUT = '1 second';

export interface CreateWorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** A prebuilt bundle (tests build it once per file); without it, the workflows are bundled in a thread. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** How long running activities may finish at shutdown (WORKER_SHUTDOWN_GRACE_SECONDS for the entry points). */
  shutdownGraceTime: NonNullable<WorkerOptions['shutdownGraceTime']>;
  /** When given, activity durations are recorded in it. */
  metrics?: Metrics;
}

export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? CONVERSATIONS_TASK_QUEUE,
    workflowBundle: options.workflowBundle ?? (await bundleWorkflowsInThread(WORKFLOWS_PATH)),
    activities: options.metrics
      ? timeActivities(createActivities(options), options.metrics.phaseDuration)
      : createActivities(options),
    shutdownGraceTime: options.shutdownGraceTime,
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT,
  });
}
