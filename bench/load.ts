// `npm run bench:load` (issue #11 "The benchmark"): the product's hot path under sustained load, against the stack
// started as `npm start` starts it (or a running gateway with --url), beside the physical limit of the machine
// measured in the same run. Prints accepted messages/s, accept latency, processing lag (accept → the workflow's
// applied position covers the batch), conversation creation rate, status-read latency during the load, CPU share per
// process, rows lost / duplicated (counted in PostgreSQL) and the ratio to the physical limit, each with the issue's
// goal beside it. `--chat`: chat turns (respond: true) against fake OpenAI servers with a 0 ms model — the product's
// overhead per turn, and the turn latency while compactions run with a 5 s summariser.
//
// The parts (bench/load/): stack.ts (start or attach), setup.ts (tenants, conversations), messages.ts (the batches),
// ingest.ts (the load and the status reads), applied.ts (processing lag), integrity.ts (lost / duplicated),
// limit.ts (physical limit), cpu.ts (CPU share), ingestBench.ts and chatBench.ts (the two scenarios), report.ts.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runChatBench } from './load/chatBench.js';
import { runIngestBench } from './load/ingestBench.js';
import { printProfile } from './load/profile.js';
import { attachStack, closeStartedStacks, type Stack, startStack } from './load/stack.js';

const positive = (name: string) => (text: string) => {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError(`${name} must be a positive number`);
  return value;
};

const program = new Command('bench:load')
  .description('Sustained ingest (or --chat turns) against the product, beside the physical limit of this machine')
  .option('--seconds <n>', 'sustained ingest duration', positive('--seconds'), 60)
  .option('--clients <n>', 'concurrent HTTP clients', positive('--clients'), 32)
  .option('--conversations <n>', 'conversations under load', positive('--conversations'), 1000)
  .option('--tenants <n>', 'tenants the conversations are spread over', positive('--tenants'), 10)
  .option('--compact', 'let the reported prompt cross the compaction threshold periodically (compactions under load)')
  .option('--status-rate <n>', 'GET …/status reads per second during the load', positive('--status-rate'), 5)
  .option(
    '--status-timeout-ms <n>',
    'a status read without an answer by then is a timeout',
    positive('--status-timeout-ms'),
    5_000,
  )
  .option('--timeout-ms <n>', 'timeout of one ingest request', positive('--timeout-ms'), 30_000)
  .option('--poll-ms <n>', 'interval of the applied-position poller (processing lag)', positive('--poll-ms'), 100)
  .option(
    '--drain-timeout <s>',
    'how long to wait for every conversation to apply everything (default: max(300, 3 × --seconds))',
    positive('--drain-timeout'),
  )
  .option(
    '--offered-rate <n>',
    'after the closed loop: batches due at this many messages a second, open loop (latency at a load)',
    positive('--offered-rate'),
    1000,
  )
  .option('--offered-seconds <n>', 'duration of the open-loop phase', positive('--offered-seconds'), 20)
  .option('--no-offered', 'skip the open-loop phase')
  .option('--no-limit', 'skip the physical-limit run')
  .option('--limit-seconds <n>', 'physical-limit duration (default: --seconds)', positive('--limit-seconds'))
  .option('--chat', 'chat mode: turns with respond: true against fake OpenAI servers')
  .option(
    '--chat-conversations <n>',
    'chat mode: conversations, each with one turn in flight',
    positive('--chat-conversations'),
    8,
  )
  .option('--chat-seconds <n>', 'chat mode: duration of each phase', positive('--chat-seconds'), 20)
  .option(
    '--summary-delay-ms <n>',
    'chat mode: how long the fake summariser takes',
    positive('--summary-delay-ms'),
    5_000,
  )
  .option(
    '--compact-every <n>',
    'chat mode: every n-th turn reports a prompt over the threshold',
    positive('--compact-every'),
    8,
  )
  .option(
    '--cpu-prof <dir>',
    "write a V8 CPU profile of the product's process to <dir> and print where its time went (not with --url)",
  )
  .option('--url <url>', 'use a running gateway instead of starting the stack')
  .addOption(new Option('--admin-key <key>', 'the running gateway’s admin key (with --url)'))
  .option('--database-url <url>', 'with --url: its database (owner role), for lag, row counts and the limit');

export type LoadOptions = {
  seconds: number;
  clients: number;
  conversations: number;
  tenants: number;
  compact?: boolean;
  statusRate: number;
  statusTimeoutMs: number;
  timeoutMs: number;
  pollMs: number;
  drainTimeout?: number;
  offeredRate: number;
  offeredSeconds: number;
  offered: boolean;
  limit: boolean;
  limitSeconds?: number;
  chat?: boolean;
  chatConversations: number;
  chatSeconds: number;
  summaryDelayMs: number;
  compactEvery: number;
  cpuProf?: string;
  url?: string;
  adminKey?: string;
  databaseUrl?: string;
};

const log = (line: string) => console.log(line);
const progress = (line: string) => console.error(line);

async function main(): Promise<void> {
  program.parse();
  const options = program.opts<LoadOptions>();
  if (options.url && !options.adminKey) program.error('--url needs --admin-key');
  if (options.url && options.chat) program.error('--chat starts its own stack (its providers point at the fakes)');
  if (options.url && options.cpuProf) program.error('--cpu-prof profiles a stack this run starts (not with --url)');
  const cpuProfileDir = options.cpuProf ? resolve(options.cpuProf) : undefined;
  if (cpuProfileDir) mkdirSync(cpuProfileDir, { recursive: true });
  const profiled = cpuProfileDir ? { cpuProfileDir } : {};
  let stack: Stack | null = null;
  // Cleanup runs once, whoever asks first (the end, a failure, Ctrl-C); a second Ctrl-C exits without waiting.
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= Promise.all([stack?.close(), closeStartedStacks()]).then(
      () => undefined,
      (err: Error) => progress(`cleanup: ${err.message}`),
    ));
  let signals = 0;
  const onSignal = (code: number) => {
    signals += 1;
    if (signals > 1) process.exit(code);
    progress('interrupted: stopping the stack and dropping its database (Ctrl-C again to exit at once)…');
    void cleanup().then(() => process.exit(code));
  };
  process.on('SIGINT', () => onSignal(130));
  process.on('SIGTERM', () => onSignal(143));
  let code = 0;
  try {
    if (options.chat) {
      await runChatBench(
        options,
        (config) => startStack({ ...config, ...profiled, log: progress }).then((s) => (stack = s)),
        {
          log,
          progress,
        },
      );
    } else {
      stack = options.url
        ? await attachStack({
            url: options.url,
            adminKey: options.adminKey!,
            ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
          })
        : await startStack({ ...profiled, log: progress });
      await runIngestBench(options, stack, { log, progress });
    }
  } catch (err) {
    if (signals > 0) return; // interrupted: the signal handler cleans up and exits
    progress(`bench:load failed: ${(err as Error).stack ?? String(err)}`);
    const tail = (stack as Stack | null)?.stderr().trim();
    if (tail) progress(`dev.ts stderr (last lines):\n${tail}`);
    code = 1;
  }
  if (signals > 0) return;
  await cleanup();
  // The product's process writes its profile when it exits, i.e. once the stack is closed.
  if (cpuProfileDir && code === 0) printProfile(cpuProfileDir, log, (stack as Stack | null)?.readyAfterMs ?? 0);
  process.exit(code);
}

await main();
