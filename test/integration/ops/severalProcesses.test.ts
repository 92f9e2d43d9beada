// Several gateways and several workers at once (issue #14 §7, DESIGN.md §3): two real `workers/gateway.ts` processes
// and two worker processes (test/support/harness/workerProcess.ts: the product's activities and workflow bundle on the
// `conversations` task queue) share one PostgreSQL database and one Temporal namespace — a fresh one, prepared by
// `dctx temporal setup --create-namespace`, so that no other worker on the shared dev server can take its tasks. A
// bounded load (~5 s) of two-message batches with idempotency keys and growing usage readings (compactions trigger)
// goes to several conversations through both gateways, every batch of a conversation to the other gateway than the
// one before, some re-sent through the other gateway; halfway the worker that completed most of the conversations'
// workflow tasks so far is SIGKILLed. Then: every accepted message
// stored exactly once, in accept order; each conversation's applied_seq reaches its batch_seq (bounded wait); every
// compaction finished, committed ones once (one event each, disjoint archived rows, each archived row theirs).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { COMMITTED_STATUSES } from '../../../contracts/compaction.js';
import { selectWithState } from '../../../infra/db/messages.js';
import { CONVERSATIONS_TASK_QUEUE, conversationWorkflowId } from '../../../workflows/ids.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { type EntryPoint, killEntryPoint, runDctx, startEntryPoint } from '../../support/harness/entryPoint.js';
import { startWorkerProcess, type WorkerProcess } from '../../support/harness/spawnWorker.js';
import { workflowBundle } from '../../support/harness/temporal.js';
import { compactionsOf } from '../workflows/transcript.js';

const NAMESPACE = `dc-multi-${randomUUID().slice(0, 8)}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const CONVERSATIONS = 6;
const LOAD_MS = 5_000;
/** How long every conversation may take to catch up after the load (a bound on progress, not a speed goal). */
const CATCH_UP_MS = 120_000;

let testDb: TestDatabase;
let bundleDir: string;
let connection: Connection;
const workers: WorkerProcess[] = [];
const gateways: Array<{ process: EntryPoint; url: string }> = [];

async function post(url: string, path: string, key: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  connection = await Connection.connect({ address: inject('temporalAddress') });
  const at = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: NAMESPACE };
  const setup = await runDctx(['temporal', 'setup', '--create-namespace', '--retention-days', '1'], at);
  expect(setup.stderr).toBe('');
  bundleDir = await mkdtemp(join(tmpdir(), 'dc-multi-'));
  const bundlePath = join(bundleDir, 'bundle.js');
  await writeFile(bundlePath, (await workflowBundle()).code);
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorkerProcess({
        databaseUrl: testDb.url,
        temporalAddress: inject('temporalAddress'),
        temporalNamespace: NAMESPACE,
        taskQueue: CONVERSATIONS_TASK_QUEUE,
        bundlePath,
      }),
    );
    const gateway = startEntryPoint('workers/gateway.ts', {
      ...at,
      DATABASE_URL: testDb.url,
      DURABLE_CONTEXT_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_PORT: '0',
      GATEWAY_HOST: '127.0.0.1',
    });
    gateways.push({ process: gateway, url: '' });
  }
  await Promise.all(workers.map((w) => w.waitFor('READY', 120_000)));
  for (const gateway of gateways) {
    const [, url] = await gateway.process.expectOutput(/API: +(http:\/\/\S+)\/v1/, 120_000);
    gateway.url = url!;
  }
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await Promise.all(gateways.map((g) => killEntryPoint(g.process)));
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
  await connection?.operatorService.deleteNamespace({ namespace: NAMESPACE }).catch(() => undefined);
  await connection?.close();
  await testDb?.drop();
});

/**
 * The worker that completed the most of the conversations' recent workflow tasks (identity `<pid>@<host>`): killing
 * it interrupts real work, whichever worker the server happened to give the conversations to.
 */
async function busiestWorker(tenant: string, tracks: readonly Track[]): Promise<WorkerProcess> {
  const completed = new Map<string, number>();
  for (const track of tracks) {
    const history = await connection.workflowService.getWorkflowExecutionHistory({
      namespace: NAMESPACE,
      execution: { workflowId: conversationWorkflowId(tenant, track.id) },
      maximumPageSize: 1000,
    });
    for (const event of history.history?.events ?? []) {
      const pid = event.workflowTaskCompletedEventAttributes?.identity?.split('@')[0];
      if (pid) completed.set(pid, (completed.get(pid) ?? 0) + 1);
    }
  }
  const ranked = workers.map((w) => ({ w, n: completed.get(String(w.child.pid)) ?? 0 })).sort((x, y) => y.n - x.n);
  expect(ranked[0]!.n, 'the workers completed no workflow task before the kill').toBeGreaterThan(0);
  return ranked[0]!.w;
}

interface Track {
  id: string;
  threshold: number;
  /** Keys of the accepted messages, in accept order. */
  keys: string[];
  batches: number;
  reading: number;
}

/** A batch of two messages with a reading that climbs past the threshold, then drops as after a compaction. */
function nextBatch(track: Track, n: number) {
  track.reading =
    track.reading >= track.threshold ? Math.floor(track.threshold * 0.3) : track.reading + track.threshold * 0.2;
  const keys = [`${track.id}:${n}:u`, `${track.id}:${n}:a`];
  return {
    keys,
    body: {
      messages: [
        {
          message: { role: 'user', content: `question ${n} of ${track.id} about the deployment` },
          idempotencyKey: keys[0],
        },
        {
          message: { role: 'assistant', content: `answer ${n} of ${track.id}: ${'details '.repeat(300)}` },
          idempotencyKey: keys[1],
        },
      ],
      usage: {
        prompt_tokens: Math.floor(track.reading),
        completion_tokens: 90,
        total_tokens: Math.floor(track.reading) + 90,
      },
    },
  };
}

describe('two gateways and two workers on one database and one namespace', () => {
  it('lose and duplicate nothing under load while a worker is killed, and every conversation catches up', async () => {
    const [first, second] = gateways.map((g) => g.url) as [string, string];
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    expect((await post(first, '/v1/tenants', ADMIN_KEY, { id: tenant })).status).toBe(201);
    const issued = await post(second, `/v1/tenants/${tenant}/keys`, ADMIN_KEY, {});
    expect(issued.status).toBe(201);
    const key: string = issued.json.key;

    const tracks: Track[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) {
      const id = `multi-${i}`;
      const created = await post(gateways[i % 2]!.url, '/v1/conversations', key, {
        conversationId: id,
        model: 'gpt-test',
        contextLength: 64_000,
      });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      const threshold = Number(created.json.status.thresholdTokens);
      expect(threshold).toBeGreaterThan(0);
      tracks.push({ id, threshold, keys: [], batches: 0, reading: threshold * 0.3 });
    }

    const perGateway = [0, 0];
    let resent = 0;
    const end = Date.now() + LOAD_MS;
    let victim: WorkerProcess | undefined;
    const killed = sleep(LOAD_MS / 2).then(async () => {
      victim = await busiestWorker(tenant, tracks);
      return victim.kill();
    });
    const load = tracks.map(async (track, i) => {
      for (let n = 1; Date.now() < end; n++) {
        const batch = nextBatch(track, n);
        const via = (i + n) % 2;
        let stored = 0;
        // A 503 says the messages are stored but Temporal was not told: the client retries with the same keys.
        for (let attempt = 0; ; attempt++) {
          const answer = await post(gateways[via]!.url, `/v1/conversations/${track.id}/messages`, key, batch.body);
          if (answer.status === 202) {
            stored += answer.json.stored;
            break;
          }
          expect(answer.status, JSON.stringify(answer.json)).toBe(503);
          expect(attempt).toBeLessThan(10);
          await sleep(200);
        }
        expect(stored).toBe(2);
        track.keys.push(...batch.keys);
        track.batches += 1;
        perGateway[via]! += 1;
        if (n % 4 === 0) {
          const again = await post(gateways[1 - via]!.url, `/v1/conversations/${track.id}/messages`, key, batch.body);
          expect(again.status).toBe(202);
          expect(again.json).toMatchObject({ accepted: 2, stored: 0, duplicates: 2 });
          resent += 1;
        }
      }
    });
    await Promise.all(load);
    expect(await killed).toBe('SIGKILL');
    expect(perGateway.every((count) => count > 0)).toBe(true);
    expect(resent).toBeGreaterThan(0);

    // Every conversation catches up on the remaining worker: applied_seq reaches batch_seq, and no compaction is left
    // pending or running — for a second on end (a committed compaction applies the batches folded meanwhile, which
    // may start the next one).
    const deadline = Date.now() + CATCH_UP_MS;
    let behind: unknown[] = [];
    for (let settled = 0; ; ) {
      const rows = await testDb.db
        .selectFrom('conversations')
        .select(['id', 'batch_seq', 'applied_seq'])
        .where('tenant_id', '=', tenant)
        .execute();
      const open = (await compactionsOf(testDb.db, tenant)).filter((c) => ['pending', 'running'].includes(c.status));
      behind = [...rows.filter((r) => r.applied_seq < r.batch_seq), ...open.map((c) => `${c.id}: ${c.status}`)];
      settled = rows.length === CONVERSATIONS && behind.length === 0 ? settled + 1 : 0;
      if (settled >= 4) {
        for (const track of tracks) expect(rows.find((r) => r.id === track.id)?.batch_seq).toBe(track.batches);
        break;
      }
      if (Date.now() > deadline) throw new Error(`not caught up within ${CATCH_UP_MS} ms: ${JSON.stringify(behind)}`);
      await sleep(250);
    }
    expect(workers.find((w) => w !== victim)!.child.exitCode).toBeNull();

    // One snapshot of rows, compactions and events (the owner role: no row-level security), so that the checks below
    // see one committed state.
    const { rows, compactions, events } = await testDb.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (tx) => ({
        rows: await selectWithState(tx, tenant)
          .select(['m.id', 'm.conversation_id', 'm.idempotency_key', 's.active', 's.compacted', 's.compaction_id'])
          .orderBy('m.id')
          .execute(),
        compactions: await tx.selectFrom('compactions').selectAll().where('tenant_id', '=', tenant).execute(),
        events: await tx
          .selectFrom('events')
          .select('compaction_id')
          .where('tenant_id', '=', tenant)
          .where('type', '=', 'session:compress')
          .execute(),
      }));

    // Nothing lost or duplicated: each accepted key stored once, in accept order, and no other key stored.
    const keyed = rows.filter((r) => r.idempotency_key !== null);
    for (const track of tracks) {
      const stored = keyed.filter((r) => r.conversation_id === track.id).map((r) => r.idempotency_key);
      expect(stored, track.id).toEqual(track.keys);
    }
    expect(keyed.length).toBe(tracks.reduce((sum, t) => sum + t.keys.length, 0));

    // Compactions: each committed one once — one event, its own archived rows, no row archived twice.
    const committed = compactions.filter((c) => (COMMITTED_STATUSES as readonly string[]).includes(c.status));
    expect(committed.length).toBeGreaterThan(0);
    expect(compactions.filter((c) => ['failed', 'pending', 'running'].includes(c.status))).toEqual([]);
    expect(events.map((e) => e.compaction_id).sort()).toEqual(committed.map((c) => c.id).sort());
    const archivedBy = new Map<number, string>();
    for (const compaction of committed) {
      for (const rowId of compaction.compacted_row_ids.map(Number)) {
        expect(archivedBy.has(rowId), `row ${rowId} archived twice`).toBe(false);
        archivedBy.set(rowId, compaction.id);
      }
    }
    for (const row of rows) {
      expect(row.active !== row.compacted, `row ${row.id} is live xor archived`).toBe(true);
      if (row.compacted) expect(row.compaction_id).toBe(archivedBy.get(Number(row.id)));
    }
    expect(rows.filter((r) => r.compacted).length).toBe(archivedBy.size);
    console.info(
      `several processes: ${tracks.reduce((s, t) => s + t.batches, 0)} batches (${perGateway.join(' + ')} by gateway, ` +
        `${resent} re-sent), compactions: ${compactions.map((c) => c.status).join(', ')}`,
    );
  });
});
