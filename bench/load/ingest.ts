// Sustained ingest: `clients` concurrent HTTP callers POST batches to /v1/conversations/:id/messages for `seconds`.
// A caller takes the conversation that has waited longest (one request in flight per conversation, so every
// conversation's batches are accepted in a known order: the k-th accepted batch is its k-th log batch) and puts it
// back when answered. A failed request is retried with the same idempotency keys (what a client does; the answer
// after a retry still counts from the first attempt); a batch that never got a 2xx makes its conversation
// "uncertain" for the lag figures. Meanwhile `statusReads` GETs the status of random conversations on its own
// connections, open-loop at a fixed rate, so a slow answer neither delays the next read nor hides a timeout.
// `runOffered` is the open-loop ingest: batches due at a fixed rate (the latency at a given load, which a closed loop
// at saturation cannot show: there every request queues behind the other clients', p50 ≈ clients × 2 ÷ throughput).
import { performance } from 'node:perf_hooks';
import { type Answer, isSuccess, type JsonHttp, outcomeOf } from './http.js';
import type { Batch, ConversationScript } from './messages.js';
import type { BenchConversation } from './setup.js';
import { sleep, Tally } from './stats.js';

export interface IngestTarget {
  conversation: BenchConversation;
  script: ConversationScript;
}

export interface IngestObserver {
  /** A batch got its 2xx at `acceptedAt` (performance.now()); `stored` rows were new. */
  accepted(conversation: BenchConversation, batch: Batch, acceptedAt: number, stored: number): void;
  /** A batch never got a 2xx: whether it is stored is unknown. */
  failed(conversation: BenchConversation, batch: Batch, last: Answer): void;
}

export interface IngestResult {
  /** First request → last answer. */
  seconds: number;
  acceptedBatches: number;
  acceptedMessages: number;
  /** Messages the 2xx answers reported as stored by that request (the rest: duplicates of an earlier attempt). */
  storedMessages: number;
  /** Per accepted batch: first attempt's start → the 2xx. */
  latencies: number[];
  /** Every attempt's outcome (status code, timeout, network). */
  outcomes: Tally;
  retries: number;
  failedBatches: number;
  /** Accepted messages per second of the run. */
  perSecond: number[];
  /** A sample of error answers (status and body), at most 5. */
  errorSamples: string[];
}

export interface IngestOptions {
  http: JsonHttp;
  targets: IngestTarget[];
  clients: number;
  seconds: number;
  timeoutMs: number;
  /** Retries of a failed batch (same keys). */
  retries: number;
  observer: IngestObserver;
  onSecond?: (second: number, result: IngestResult) => void;
}

const retryable = (answer: Answer) => answer.status === 0 || answer.status === 429 || answer.status >= 500;

function emptyResult(): IngestResult {
  return {
    seconds: 0,
    acceptedBatches: 0,
    acceptedMessages: 0,
    storedMessages: 0,
    latencies: [],
    outcomes: new Tally(),
    retries: 0,
    failedBatches: 0,
    perSecond: [],
    errorSamples: [],
  };
}

type PostOptions = Pick<IngestOptions, 'http' | 'timeoutMs' | 'retries' | 'observer'>;

/**
 * Posts the target's next batch (retrying a retryable failure with the same keys) and tallies it into `result`;
 * its latency counts from `first` (when the request was due), `started` is the run's start.
 */
async function post(
  options: PostOptions,
  result: IngestResult,
  target: IngestTarget,
  started: number,
  first: number,
): Promise<void> {
  const { conversation } = target;
  const batch = target.script.next();
  const body = { messages: batch.messages, usage: batch.usage };
  for (let attempt = 0; ; attempt++) {
    const answer = await options.http.request('POST', `/v1/conversations/${conversation.id}/messages`, {
      token: conversation.tenant.key,
      body,
      timeoutMs: options.timeoutMs,
    });
    result.outcomes.add(outcomeOf(answer));
    if (isSuccess(answer)) {
      const now = performance.now();
      const stored = Number(answer.body?.stored ?? batch.messages.length);
      result.acceptedBatches += 1;
      result.acceptedMessages += batch.messages.length;
      result.storedMessages += stored;
      result.latencies.push(now - first);
      const second = Math.floor((now - started) / 1000);
      result.perSecond[second] = (result.perSecond[second] ?? 0) + batch.messages.length;
      options.observer.accepted(conversation, batch, now, stored);
      return;
    }
    if (result.errorSamples.length < 5) {
      result.errorSamples.push(`${outcomeOf(answer)} ${JSON.stringify(answer.body ?? answer.errorMessage)}`);
    }
    if (attempt >= options.retries || !retryable(answer)) {
      result.failedBatches += 1;
      options.observer.failed(conversation, batch, answer);
      return;
    }
    result.retries += 1;
    await sleep(200 * (attempt + 1));
  }
}

/** Closed loop: `clients` callers, each posting its next batch as soon as the last one is answered. */
export async function runIngest(options: IngestOptions): Promise<IngestResult> {
  const result = emptyResult();
  const idle = [...options.targets];
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  const ticker = setInterval(() => {
    const second = Math.floor((performance.now() - started) / 1000);
    options.onSecond?.(second, result);
  }, 1000);

  const caller = async () => {
    while (performance.now() < deadline) {
      const target = idle.shift();
      if (!target) {
        await sleep(1);
        continue;
      }
      try {
        await post(options, result, target, started, performance.now());
      } finally {
        idle.push(target);
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, caller));
  clearInterval(ticker);
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

export interface OfferedResult extends IngestResult {
  /** Batches that were due while every conversation had a request in flight (posted as soon as one was free). */
  lateForConversation: number;
}

/**
 * Open loop (the way a load test states a latency goal at a rate): a batch is due every 1 / `batchesPerSecond` s
 * whatever the answers before it; its latency counts from when it was due, so a request that waited for a free
 * connection (at most `clients` over the agent of `http`) or for its conversation counts that wait too (no
 * coordinated omission). The batch goes to the conversation that has waited longest with no request in flight.
 */
export async function runOffered(
  options: Omit<IngestOptions, 'clients'> & { batchesPerSecond: number },
): Promise<OfferedResult> {
  const result: OfferedResult = { ...emptyResult(), lateForConversation: 0 };
  const idle = [...options.targets];
  const waiting: ((target: IngestTarget) => void)[] = [];
  const release = (target: IngestTarget) => {
    const next = waiting.shift();
    if (next) next(target);
    else idle.push(target);
  };
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const total = Math.floor(options.seconds * options.batchesPerSecond);
  const ticker = setInterval(() => {
    const second = Math.floor((performance.now() - started) / 1000);
    options.onSecond?.(second, result);
  }, 1000);
  const issue = (due: number) => {
    const pending = (async () => {
      let target = idle.shift();
      if (!target) {
        result.lateForConversation += 1;
        target = await new Promise<IngestTarget>((resolve) => waiting.push(resolve));
      }
      try {
        await post(options, result, target, started, due);
      } finally {
        release(target);
      }
    })();
    inFlight.add(pending);
    void pending.finally(() => inFlight.delete(pending));
  };
  for (let issued = 0; issued < total; ) {
    const now = performance.now();
    const dueNow = Math.min(total, Math.floor(((now - started) * options.batchesPerSecond) / 1000) + 1);
    for (; issued < dueNow; issued++) issue(started + (issued * 1000) / options.batchesPerSecond);
    await sleep(1);
  }
  while (inFlight.size > 0) await Promise.all(inFlight);
  clearInterval(ticker);
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

export interface StatusReads {
  latencies: number[];
  outcomes: Tally;
  timeouts: number;
  /** Reads that got no 200 (timeouts included). */
  failures: number;
  stop(): Promise<void>;
}

/** One GET …/status of `conversation`, tallied into `reads`. */
async function readStatus(
  http: JsonHttp,
  reads: StatusReads,
  conversation: BenchConversation,
  timeoutMs: number,
): Promise<void> {
  const answer = await http.request('GET', `/v1/conversations/${conversation.id}/status`, {
    token: conversation.tenant.key,
    timeoutMs,
  });
  reads.outcomes.add(outcomeOf(answer));
  if (answer.status === 200) reads.latencies.push(answer.ms);
  else {
    reads.failures += 1;
    if (answer.error === 'timeout') reads.timeouts += 1;
  }
}

/**
 * Every conversation's status read once, `concurrency` at a time (the issue's "GET …/status right after the burst"):
 * resolves when all are answered or timed out.
 */
export async function statusBurst(
  http: JsonHttp,
  conversations: readonly BenchConversation[],
  concurrency: number,
  timeoutMs: number,
): Promise<StatusReads> {
  const reads: StatusReads = { latencies: [], outcomes: new Tally(), timeouts: 0, failures: 0, stop: async () => {} };
  let next = 0;
  const reader = async () => {
    while (next < conversations.length) await readStatus(http, reads, conversations[next++]!, timeoutMs);
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, reader));
  return reads;
}

/** GET …/status of random conversations, `perSecond` a second, until `stop()`; waits for the reads in flight. */
export function statusReads(
  http: JsonHttp,
  conversations: readonly BenchConversation[],
  perSecond: number,
  timeoutMs: number,
): StatusReads {
  const reads: StatusReads = {
    latencies: [],
    outcomes: new Tally(),
    timeouts: 0,
    failures: 0,
    stop: async () => {
      clearInterval(timer);
      await Promise.all(inFlight);
    },
  };
  const inFlight = new Set<Promise<void>>();
  const read = () =>
    readStatus(http, reads, conversations[Math.floor(Math.random() * conversations.length)]!, timeoutMs);
  const timer = setInterval(
    () => {
      const pending = read();
      inFlight.add(pending);
      void pending.finally(() => inFlight.delete(pending));
    },
    Math.max(1, Math.round(1000 / perSecond)),
  );
  return reads;
}
