// Builds the Temporal worker of the `conversations` task queue: the workflows of workflows/ and the activities of
// activities/ with their injected dependencies. Used by workers/worker.ts, the dev runner and the tests.
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../activities/index.js';
import { type Metrics, timeActivities } from '../infra/metrics/registry.js';
import { CONVERSATIONS_TASK_QUEUE } from '../workflows/ids.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface CreateWorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** A prebuilt bundle (tests build it once per file). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** When given, activity durations are recorded in it. */
  metrics?: Metrics;
}

export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? CONVERSATIONS_TASK_QUEUE,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: options.metrics
      ? timeActivities(createActivities(options), options.metrics.phaseDuration)
      : createActivities(options),
    shutdownGraceTime: options.shutdownGraceTime ?? '5 seconds',
    // After a crash, tasks of this worker's sticky queue move to the shared queue after this long (default 10 s),
    // part of the recovery time after a worker is killed (issue #9 §5).
    stickyQueueScheduleToStartTimeout: '2 seconds',
  });
}
