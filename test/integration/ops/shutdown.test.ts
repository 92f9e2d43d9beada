// Graceful shutdown of the standalone entry points (issue #9 §9), as an operator's SIGTERM reaches them: the real
// `workers/gateway.ts` and `workers/worker.ts` run as child processes on the run's Temporal dev server, in a namespace
// and a database of their own. The summaries come from an OpenAI-compatible endpoint on loopback whose answers wait
// until the test releases them, so a compaction (and everything queued behind it) is in flight exactly when the signal
// arrives.
//   - gateway: in-flight requests (a manual compaction, a `wait: true` post queued behind it, a post whose body is
//     still being sent) all get complete responses after SIGTERM, new connections are refused, the process exits 0;
//     one that outlasts the 10 s grace period (`wait: true` with no worker) is answered 503 + Retry-After, not reset;
//   - worker: SIGTERM during the summarize activity lets that activity finish and report (drain), the process
//     exits 0, and a worker started afterwards completes the compaction: committed once, the transcript intact.
//   - worker: an activity still running when WORKER_SHUTDOWN_GRACE_SECONDS ends is cancelled, the process exits 0,
//     and the next worker runs the activity again: committed once.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConversationClient } from '../../../clients/conversationClient.js';
import { archivePointerLine, type ChatMessage } from '../../../engine/index.js';
import { loadTranscript, selectWithState } from '../../../infra/db/messages.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { Conversations } from '../../../workers/gateway/conversations.js';
import { compactionWorkflowId, conversationWorkflowId } from '../../../workflows/ids.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import {
  type EntryPoint,
  killEntryPoint,
  runDctx,
  startEntryPoint as startProcess,
} from '../../support/harness/entryPoint.js';
import { FIXED_SUMMARY_BODY } from '../../support/harness/fixedSummarizer.js';
import {
  activeTranscript,
  agentTranscript,
  compactionsOf,
  eventsOf,
  expectTranscriptInvariants,
  keyed,
} from '../workflows/transcript.js';

const ADMIN_KEY = `admin-${randomUUID()}`;
/**
 * A namespace of its own (prepared by `dctx temporal setup`): the real worker polls the fixed `conversations` task
 * queue, where any other worker of the shared namespace (another test file's, a developer's `npm start` against the
 * same server) could take these conversations' tasks — and the test that runs no worker would see one.
 */
const NAMESPACE = `dc-shutdown-${randomUUID().slice(0, 8)}`;
const MODEL = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };
const { EventType } = proto.temporal.api.enums.v1;

let testDb: TestDatabase;
let configDir: string;
let llm: GatedLlm;
let temporalConnection: Connection;
let conversations: Conversations;
const children = new Set<ChildProcess>();

// ---------------------------------------------------------------------------------------------------------------
// An OpenAI-compatible summary endpoint whose answers are held until release()

interface GatedLlm {
  origin: string;
  /** Chat completion requests received so far. */
  received(): number;
  /** Resolves once `count` requests have arrived (each is then held). */
  arrived(count: number): Promise<void>;
  /** Answers every held request, and every later one at once, with FIXED_SUMMARY_BODY. */
  release(): void;
  /** Holds the requests that arrive from now on. */
  hold(): void;
  close(): Promise<void>;
}

async function startGatedLlm(): Promise<GatedLlm> {
  let count = 0;
  let open = false;
  const held: Array<() => void> = [];
  const watchers: Array<() => void> = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      for (const w of watchers.splice(0)) w();
      const answer = () => {
        const body = JSON.stringify({
          id: `chatcmpl-shutdown-${count}`,
          object: 'chat.completion',
          created: 1_760_000_000,
          model: MODEL.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: FIXED_SUMMARY_BODY, refusal: null },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 1_000, completion_tokens: 60, total_tokens: 1_060 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (open) answer();
      else held.push(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const arrived = (target: number): Promise<void> =>
    new Promise((resolve) => {
      const check = () => (count >= target ? resolve() : watchers.push(check));
      check();
    });
  return {
    origin: `http://127.0.0.1:${port}`,
    received: () => count,
    arrived,
    release: () => {
      open = true;
      for (const answer of held.splice(0)) answer();
    },
    hold: () => {
      open = false;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The entry points as child processes

function startEntryPoint(
  script: 'workers/gateway.ts' | 'workers/worker.ts',
  extraEnv: Record<string, string> = {},
): EntryPoint {
  const entry = startProcess(script, {
    ...extraEnv,
    DATABASE_URL: testDb.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: NAMESPACE,
    DURABLE_CONTEXT_CONFIG: join(configDir, 'config.yaml'),
    DURABLE_CONTEXT_ADMIN_KEY: ADMIN_KEY,
    FAKE_LLM_KEY: 'sk-shutdown-test',
    GATEWAY_PORT: '0',
    GATEWAY_HOST: '127.0.0.1',
  });
  children.add(entry.child);
  return entry;
}

/** Ends a process a test left running (after a failed assertion), so that it cannot take the next test's tasks. */
const ensureEnded = killEntryPoint;

async function startGateway(): Promise<{ process: EntryPoint; url: URL }> {
  const gateway = startEntryPoint('workers/gateway.ts');
  const [, address] = await gateway.expectOutput(/API: +(http:\/\/\S+)\/v1/);
  return { process: gateway, url: new URL(address!) };
}

/**
 * A worker as `npm run worker` starts it. Its grace for running activities at SIGTERM is 60 s unless `graceSeconds`
 * says otherwise, so that a drain this file waits for never runs out under a loaded CI machine (the default, 5 s, did).
 */
async function startWorker(graceSeconds = 60): Promise<EntryPoint> {
  const worker = startEntryPoint('workers/worker.ts', { WORKER_SHUTDOWN_GRACE_SECONDS: String(graceSeconds) });
  await worker.expectOutput(/Worker polling task queue 'conversations'/);
  return worker;
}

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  llm = await startGatedLlm();
  configDir = await mkdtemp(join(tmpdir(), 'dc-shutdown-'));
  await writeFile(
    join(configDir, 'config.yaml'),
    [
      `model: { default: ${MODEL.model}, provider: ${MODEL.provider} }`,
      'providers:',
      `  openai: { base_url: "${llm.origin}/v1", api_key_env: FAKE_LLM_KEY, models: [${MODEL.model}] }`,
    ].join('\n'),
  );
  const setup = await runDctx(['temporal', 'setup', '--create-namespace', '--retention-days', '1'], {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: NAMESPACE,
  });
  expect(setup.stderr).toBe('');
  temporalConnection = await Connection.connect({ address: inject('temporalAddress') });
  conversations = new Conversations(testDb.db, new ConversationClient(temporalConnection, { namespace: NAMESPACE }));
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(
    [...children].map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? undefined
        : new Promise((resolve) => child.once('exit', resolve)),
    ),
  );
  await temporalConnection?.operatorService.deleteNamespace({ namespace: NAMESPACE }).catch(() => undefined);
  await temporalConnection?.close();
  await llm?.close();
  await testDb?.drop();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------------
// HTTP on its own connections (no keep-alive pool), so that a reset shows as the request's own error

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

function readAnswer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null });
    });
  });
}

/**
 * A request whose body is sent in two halves: `started` resolves once the server has taken the headers (it answers
 * `100 Continue`) and the first half is written; `finish()` sends the rest.
 */
function twoPartRequest(base: URL, method: string, path: string, key: string | null, body: unknown) {
  const text = JSON.stringify(body);
  const half = Math.floor(text.length / 2);
  const req = httpRequest(new URL(path, base), {
    method,
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      expect: '100-continue',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
  });
  answer.catch(() => undefined);
  const started = new Promise<void>((resolve) =>
    req.once('continue', () => req.write(text.slice(0, half), () => resolve())),
  );
  return { started, answer, finish: () => req.end(text.slice(half)) };
}

async function call(base: URL, method: string, path: string, key: string | null, body?: unknown): Promise<Answer> {
  const request = twoPartRequest(base, method, path, key, body ?? {});
  await request.started;
  request.finish();
  return request.answer;
}

/** What a fresh TCP connection to the port gets: refused, or accepted. */
function connectOutcome(url: URL): Promise<'refused' | 'accepted'> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    // ECONNRESET before 'connect': the listener closed with this connection still in its accept queue, so the
    // kernel reset it; the server never took it, as with a refusal (seen under load, when the probe races the close).
    socket.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET' ? resolve('refused') : reject(err),
    );
  });
}

async function adminTenant(base: URL): Promise<{ id: string; key: string }> {
  const id = `t-${randomUUID().slice(0, 8)}`;
  const created = await call(base, 'POST', '/v1/tenants', ADMIN_KEY, { id });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const issued = await call(base, 'POST', `/v1/tenants/${id}/keys`, ADMIN_KEY, {});
  expect(issued.status, JSON.stringify(issued.body)).toBe(201);
  return { id, key: issued.body.key as string };
}

/** A tenant and its key through the admin routes, and a conversation of that tenant through the API. */
async function newConversation(base: URL): Promise<{ tenant: { id: string; key: string }; conv: string }> {
  const tenant = await adminTenant(base);
  const conv = `shutdown-${randomUUID()}`;
  const created = await call(base, 'POST', '/v1/conversations', tenant.key, { conversationId: conv, ...MODEL });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { tenant, conv };
}

// ---------------------------------------------------------------------------------------------------------------
// Checks of the stored conversation

/** Waits until the gateway has stored `count` batches of the conversation (the request is then past its commit). */
async function storedBatches(tenantId: string, conversationId: string, count: number) {
  for (;;) {
    const status = await conversations.status(tenantId, conversationId);
    if (status.batchSeq >= count) return status;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** activity name → identities of the workers that started / completed it, from a workflow's history. */
async function activityWorkers(workflowId: string) {
  const history = await temporalConnection.workflowService.getWorkflowExecutionHistory({
    namespace: NAMESPACE,
    execution: { workflowId },
  });
  const names = new Map<string, string>();
  const started: Record<string, string[]> = {};
  const completed: Record<string, string[]> = {};
  for (const e of history.history?.events ?? []) {
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      names.set(String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
    } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const a = e.activityTaskStartedEventAttributes!;
      const name = names.get(String(a.scheduledEventId)) ?? '?';
      started[name] = [...(started[name] ?? []), `${a.identity}#${a.attempt}`];
    } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const a = e.activityTaskCompletedEventAttributes!;
      const name = names.get(String(a.scheduledEventId)) ?? '?';
      completed[name] = [...(completed[name] ?? []), a.identity ?? '?'];
    }
  }
  return { started, completed };
}

/** Every sent message is one row, in order; rows are live xor archived; exactly one committed compaction. */
async function expectCompactedOnce(tenantId: string, sessionId: string, sent: ReturnType<typeof keyed>) {
  const rows = await withTenant(testDb.db, tenantId, (tx) =>
    selectWithState(tx, tenantId)
      .select(['m.id', 'm.idempotency_key', 'm.content', 's.active', 's.compacted', 's.compaction_id'])
      .orderBy('m.id')
      .execute(),
  );
  const keyedRows = rows.filter((r) => r.idempotency_key !== null);
  expect(keyedRows.map((r) => r.idempotency_key)).toEqual(sent.map((m) => m.idempotencyKey));
  expect(keyedRows.map((r) => r.content)).toEqual(sent.map((m) => m.message.content ?? null));
  for (const r of rows) expect(r.active !== r.compacted, `row ${r.id} is live xor archived`).toBe(true);

  const records = await compactionsOf(testDb.db, tenantId);
  expect(records.map((r) => r.status)).toEqual(['committed']);
  // The model's body, then what the quality gate appended (issue #15 §3), then the archive pointer (SPEC §19).
  const body = records[0]!.summary_body ?? '';
  expect(body.startsWith(FIXED_SUMMARY_BODY)).toBe(true);
  expect(body.split('\n').at(-1)).toBe(archivePointerLine(records[0]!.conversation_id));
  const archived = rows.filter((r) => r.compacted).map((r) => Number(r.id));
  expect(archived).toEqual(records[0]!.compacted_row_ids.map(Number).sort((a, b) => a - b));
  expect(rows.filter((r) => r.compacted).every((r) => r.compaction_id === records[0]!.id)).toBe(true);
  const events = await eventsOf(testDb.db, tenantId);
  expect(events.map((e) => [e.type, e.compaction_id])).toEqual([['session:compress', records[0]!.id]]);

  const live = await activeTranscript(testDb.db, tenantId, sessionId);
  const transcript: ChatMessage[] = (await loadTranscript(testDb.db, tenantId, sessionId)).map((r) => r.message);
  expectTranscriptInvariants(live, transcript);
}

// ---------------------------------------------------------------------------------------------------------------

describe('SIGTERM to the standalone entry points', () => {
  it('gateway: in-flight requests get complete responses, new connections are refused, exit 0', async () => {
    llm.hold();
    let worker: EntryPoint | undefined;
    let gateway: { process: EntryPoint; url: URL } | undefined;
    try {
      worker = await startWorker();
      gateway = await startGateway();
      const { url } = gateway;
      const { tenant, conv } = await newConversation(url);
      const first = keyed(agentTranscript(7, { tag: 'gateway' }), 'g1');
      const posted = await call(url, 'POST', `/v1/conversations/${conv}/messages`, tenant.key, {
        messages: first,
        wait: true,
      });
      expect(posted.status, JSON.stringify(posted.body)).toBe(200);

      // In flight at the signal: (1) a manual compaction, its summary held by the endpoint; (2) a `wait: true` post,
      // stored but not yet applied (the workflow is busy with the compaction); (3) a post whose body is half sent.
      const compaction = call(url, 'POST', `/v1/conversations/${conv}/compact`, tenant.key, {});
      compaction.catch(() => undefined);
      await llm.arrived(1);
      const waited = call(url, 'POST', `/v1/conversations/${conv}/messages`, tenant.key, {
        messages: keyed([{ role: 'user', content: 'a question while the gateway stops' }], 'g2'),
        wait: true,
      });
      waited.catch(() => undefined);
      expect((await storedBatches(tenant.id, conv, 2)).appliedSeq).toBe(1);
      const slow = twoPartRequest(url, 'POST', `/v1/conversations/${conv}/messages`, tenant.key, {
        messages: keyed([{ role: 'user', content: 'a message whose body arrives slowly' }], 'g3'),
      });
      await slow.started;

      gateway.process.child.kill('SIGTERM');
      await gateway.process.expectOutput(/SIGTERM: finishing in-flight work/);
      // Stopped accepting: a new connection is refused while the requests above are still running.
      let outcome = await connectOutcome(url);
      for (let i = 0; outcome === 'accepted' && i < 50; i++) {
        await new Promise((r) => setTimeout(r, 20));
        outcome = await connectOutcome(url);
      }
      expect(outcome).toBe('refused');
      expect(gateway.process.child.exitCode).toBeNull();

      slow.finish();
      const slowAnswer = await slow.answer;
      expect(slowAnswer.status, JSON.stringify(slowAnswer.body)).toBe(202);
      expect(slowAnswer.body).toMatchObject({ accepted: 1, stored: 1 });
      llm.release();
      const compacted = await compaction;
      expect(compacted.status, JSON.stringify(compacted.body)).toBe(200);
      expect(compacted.body).toMatchObject({ status: 'committed', trigger: 'manual' });
      const waitedAnswer = await waited;
      expect(waitedAnswer.status, JSON.stringify(waitedAnswer.body)).toBe(200);
      expect(waitedAnswer.body.status.appliedSeq).toBeGreaterThanOrEqual(2);

      expect(await gateway.process.exit).toBe(0);
      await gateway.process.expectOutput(/Stopped\./);
      // Everything those responses promised is stored: three batches, one compaction.
      const status = await conversations.sync(tenant.id, conv);
      expect(status).toMatchObject({ batchSeq: 3, appliedSeq: 3, compressionCount: 1 });

      worker.child.kill('SIGTERM');
      expect(await worker.exit).toBe(0);
    } finally {
      await ensureEnded(gateway?.process);
      await ensureEnded(worker);
    }
  });

  it('gateway: a request still running at the end of the grace period is answered 503 with Retry-After, not reset', async () => {
    // No worker at all: a `wait: true` post is stored, then waits for a workflow that does not run (up to 30 s,
    // longer than the 10 s the gateway grants in-flight requests at shutdown).
    let gateway: { process: EntryPoint; url: URL } | undefined;
    try {
      gateway = await startGateway();
      const { url } = gateway;
      const { tenant, conv } = await newConversation(url);
      const sent = keyed([{ role: 'user', content: 'accepted while no worker runs' }], 'n1');
      const waited = call(url, 'POST', `/v1/conversations/${conv}/messages`, tenant.key, {
        messages: sent,
        wait: true,
      });
      waited.catch(() => undefined);
      await storedBatches(tenant.id, conv, 1);

      gateway.process.child.kill('SIGTERM');
      const answer = await waited;
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.headers['retry-after']).toBe('2');
      expect(answer.body.message).toMatch(/shutting down/);
      expect(await gateway.process.exit).toBe(0);
      // What was accepted is stored: the retry the 503 asks for stores nothing twice.
      expect(await conversations.status(tenant.id, conv)).toMatchObject({ batchSeq: 1, activeMessages: 1 });
      const retried = await conversations.submit(tenant.id, conv, { messages: sent });
      expect(retried.rows).toBe(0);
      await conversations.temporal.client.workflow.getHandle(conversationWorkflowId(tenant.id, conv)).terminate();
    } finally {
      await ensureEnded(gateway?.process);
    }
  });

  it('worker: SIGTERM during the summarize activity drains it, exits 0, and the next worker completes the work', async () => {
    llm.hold();
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    await ensureTenant(testDb.db, { id: tenant, name: tenant });
    const conv = `shutdown-${randomUUID()}`;
    const sent = keyed(agentTranscript(7, { tag: 'worker' }), 'w1');
    let first: EntryPoint | undefined;
    let second: EntryPoint | undefined;
    try {
      first = await startWorker();
      await conversations.submit(tenant, conv, { messages: sent }, MODEL);
      const before = await conversations.sync(tenant, conv);
      expect(before.activeMessages).toBe(sent.length);

      const requestsBefore = llm.received();
      const compaction = conversations.compact(tenant, conv);
      compaction.catch(() => undefined);
      await llm.arrived(requestsBefore + 1);
      // The summarize activity is running on the first worker (its provider call is held): stop that worker.
      first.child.kill('SIGTERM');
      // Draining: the worker polls no more and waits for its running activity; only then is the provider answered.
      await first.expectOutput(/state: 'DRAINING'/);
      expect(first.output()).not.toMatch(/state: 'DRAINED'/);
      expect(first.child.exitCode).toBeNull();
      llm.release();
      expect(await first.exit).toBe(0);
      await first.expectOutput(/Worker stopped\./);

      second = await startWorker();
      const result = await compaction;
      expect(result).toMatchObject({ status: 'committed', trigger: 'manual', error: null });
      // The summary was asked for once, plus the quality gate's one re-prompt (FIXED_SUMMARY_BODY keeps none of the
      // window's paths, issue #15 §3), both in the one summarize activity: the draining worker finished it and
      // reported it; the next phase ran on the worker started afterwards.
      expect(llm.received()).toBe(requestsBefore + 2);
      const workers = await activityWorkers(compactionWorkflowId(tenant, before.sessionId, 1));
      const firstIdentity = `${first.child.pid}@${hostname()}`;
      const secondIdentity = `${second.child.pid}@${hostname()}`;
      expect(workers.started.summarize).toEqual([`${firstIdentity}#1`]);
      expect(workers.completed.summarize).toEqual([firstIdentity]);
      expect(workers.completed.reassemble).toEqual([secondIdentity]);

      await expectCompactedOnce(tenant, result.sessionId, sent);
      const later = keyed([{ role: 'user', content: 'after the restart' }], 'w2');
      await conversations.submit(tenant, conv, { messages: later });
      const after = await conversations.sync(tenant, conv);
      expect(after).toMatchObject({ compressionCount: 1, appliedSeq: 2 });
      await expectCompactedOnce(tenant, after.sessionId, [...sent, ...later]);

      second.child.kill('SIGTERM');
      expect(await second.exit).toBe(0);
    } finally {
      await ensureEnded(first);
      await ensureEnded(second);
    }
  });

  it('worker: an activity still running when WORKER_SHUTDOWN_GRACE_SECONDS ends is cancelled, and the next worker runs it again', async () => {
    llm.hold();
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    await ensureTenant(testDb.db, { id: tenant, name: tenant });
    const conv = `shutdown-${randomUUID()}`;
    const sent = keyed(agentTranscript(7, { tag: 'grace' }), 'x1');
    let first: EntryPoint | undefined;
    let second: EntryPoint | undefined;
    try {
      first = await startWorker(1);
      await first.expectOutput(/gives running activities 1 s to finish \(WORKER_SHUTDOWN_GRACE_SECONDS\)/);
      await conversations.submit(tenant, conv, { messages: sent }, MODEL);
      const before = await conversations.sync(tenant, conv);
      const requestsBefore = llm.received();
      const compaction = conversations.compact(tenant, conv);
      compaction.catch(() => undefined);
      await llm.arrived(requestsBefore + 1);
      // The summary stays held: after its second of grace the activity is cancelled and the worker exits all the same.
      first.child.kill('SIGTERM');
      expect(await first.exit).toBe(0);
      await first.expectOutput(/Worker stopped\./);
      expect(llm.received()).toBe(requestsBefore + 1);

      llm.release();
      second = await startWorker();
      const result = await compaction;
      expect(result).toMatchObject({ status: 'committed', trigger: 'manual', error: null });
      // The cancelled attempt's request, then the second attempt's summary and its quality re-prompt.
      expect(llm.received()).toBe(requestsBefore + 3);
      const workers = await activityWorkers(compactionWorkflowId(tenant, before.sessionId, 1));
      const secondIdentity = `${second.child.pid}@${hostname()}`;
      expect(workers.completed.summarize).toEqual([secondIdentity]);
      expect(workers.started.summarize).toEqual([`${secondIdentity}#2`]);
      await expectCompactedOnce(tenant, result.sessionId, sent);

      second.child.kill('SIGTERM');
      expect(await second.exit).toBe(0);
    } finally {
      await ensureEnded(first);
      await ensureEnded(second);
    }
  });
});
