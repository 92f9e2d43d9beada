// A conversation worker in its own process, for crash tests that SIGKILL it (run with `node --import tsx`).
// It builds the worker the way workers/createWorker.ts does (same activities through createActivities, same worker
// options), with a kill hook:
//   PAUSE_AFTER=<activity>  run that activity to completion (its database writes are done), print `PAUSED <name>`
//                           and never return: the side effect happened, the completion is never reported.
//   PAUSE_IN=summarize      the summarizer prints `PAUSED summarize` and never returns (the activity keeps
//                           heartbeating until the process dies).
//   PAUSE_SKIP=<n>          let the first n calls of the paused activity through (default 0).
// Environment: DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default `default`) and the TLS / API key
// variables (infra/temporal/connectionOptions.ts), TASK_QUEUE (default
// `conversations`), WORKFLOW_BUNDLE_PATH (prebuilt bundle code; else workflows/ is bundled here),
// HEARTBEAT_INTERVAL_MS (default 500), CONFIG_YAML (a config.yaml text: its providers serve the agent turn, keys from
// this process's environment). Prints `READY` once the worker polls.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { type Activities, createActivities } from '../../../activities/index.js';
import { normalizeCompressionConfig, type Summarizer } from '../../../engine/index.js';
import { env } from '../../../infra/config/env.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { createDb } from '../../../infra/db/connect.js';
import { temporalTarget } from '../../../infra/temporal/connectionOptions.js';
import { STICKY_QUEUE_TIMEOUT, WORKFLOWS_PATH } from '../../../workers/runtime/createWorker.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { CONVERSATIONS_TASK_QUEUE } from '../../../workflows/ids.js';
import { fixedSummarizer } from './fixedSummarizer.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`workerProcess: ${name} is not set`);
  return value;
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const forever = () => new Promise<never>(() => undefined);

const pauseAfter = process.env.PAUSE_AFTER || null;
const pauseIn = process.env.PAUSE_IN || null;
const pauseSkip = Number(process.env.PAUSE_SKIP ?? 0);
if (pauseIn !== null && pauseIn !== 'summarize') throw new Error(`workerProcess: PAUSE_IN=${pauseIn} is not supported`);

const summarizer: Summarizer =
  pauseIn === 'summarize'
    ? async () => {
        say('PAUSED summarize');
        return forever();
      }
    : fixedSummarizer;

const db = createDb({ connectionString: required('DATABASE_URL'), maxConnections: 4, applicationName: 'crash-worker' });
const llm = process.env.CONFIG_YAML
  ? llmDepsFromConfig(parseConfigText(process.env.CONFIG_YAML), process.env, () => undefined)
  : null;
const activities = createActivities({
  db,
  baseConfig: normalizeCompressionConfig({}),
  summarizer,
  heartbeatIntervalMs: Number(process.env.HEARTBEAT_INTERVAL_MS ?? 500),
  ...(llm ? { providers: llm.providers, cacheTtl: llm.cacheTtl, env: process.env } : {}),
});

if (pauseAfter !== null) {
  const name = pauseAfter as keyof Activities;
  const real = activities[name] as (...args: unknown[]) => Promise<unknown>;
  if (typeof real !== 'function') throw new Error(`workerProcess: no activity named ${pauseAfter}`);
  let calls = 0;
  (activities as Record<string, unknown>)[name] = async (...args: unknown[]) => {
    const result = await real(...args);
    calls += 1;
    if (calls <= pauseSkip) return result;
    say(`PAUSED ${pauseAfter}`);
    return forever();
  };
}

// Stdout carries only the READY / PAUSED protocol; the SDK logs warnings and errors to stderr.
Runtime.install({ logger: new DefaultLogger('WARN') });
// As workers/worker.ts connects: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS / API key variables.
required('TEMPORAL_ADDRESS');
const temporal = temporalTarget(env);
const connection = await NativeConnection.connect(temporal.connection);
const bundlePath = process.env.WORKFLOW_BUNDLE_PATH;
// The options of createWorker (workers/createWorker.ts), with the wrapped activities.
const worker = await Worker.create({
  connection,
  namespace: temporal.namespace,
  taskQueue: process.env.TASK_QUEUE || CONVERSATIONS_TASK_QUEUE,
  ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
  activities,
  shutdownGraceTime: '5 seconds',
  stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT,
});

const running = worker.run();
say('READY');
const stop = () => worker.shutdown();
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
await running;
await connection.close();
await db.destroy();
