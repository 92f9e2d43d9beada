// `dctx temporal setup` on a cluster that is not the dev server the project starts (issue #14 §7, DESIGN.md §3): on
// the run's prepared namespace it changes nothing; a namespace that does not exist is refused (named, with how to
// create it); on a fresh namespace the real `workers/worker.ts` refuses to start until setup has registered the search
// attributes, setup registers each (then is a no-op), and the worker then polls. `--create-namespace` creates one
// and registers in one go. The namespaces it makes are deleted afterwards.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../../workflows/searchAttributes.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { type EntryPoint, killEntryPoint, runDctx, startEntryPoint } from '../../support/harness/entryPoint.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;
const FRESH = `dc-setup-${randomUUID().slice(0, 8)}`;
const CREATED = `dc-setup-created-${randomUUID().slice(0, 8)}`;

let testDb: TestDatabase;
let connection: Connection;
let worker: EntryPoint | undefined;

const at = (namespace: string) => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: namespace });

async function registered(namespace: string): Promise<Record<string, number>> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  return Object.fromEntries(
    Object.entries(listed.customAttributes ?? {}).filter(([name]) => SEARCH_ATTRIBUTES.some((a) => a.name === name)),
  );
}

const EXPECTED = Object.fromEntries(
  SEARCH_ATTRIBUTES.map((a) => [
    a.name,
    a.type === 'Int' ? IndexedValueType.INDEXED_VALUE_TYPE_INT : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  ]),
);

function startWorker(namespace: string): EntryPoint {
  worker = startEntryPoint('workers/worker.ts', { ...at(namespace), DATABASE_URL: testDb.url });
  return worker;
}

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await killEntryPoint(worker);
  for (const namespace of [FRESH, CREATED]) {
    await connection?.operatorService.deleteNamespace({ namespace }).catch(() => undefined);
  }
  await connection?.close();
  await testDb?.drop();
});

describe('dctx temporal setup', () => {
  it('on the prepared namespace of the run it registers nothing', async () => {
    const before = await registered(inject('temporalNamespace'));
    const run = await runDctx(['temporal', 'setup'], at(inject('temporalNamespace')));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`namespace ${inject('temporalNamespace')}: exists`);
    expect(run.stdout).toContain('nothing to do: all 8 search attributes already registered');
    expect(await registered(inject('temporalNamespace'))).toEqual(before);
    expect(before).toEqual(EXPECTED);
  });

  it('refuses a namespace that does not exist, naming it and how to create it', async () => {
    const run = await runDctx(['temporal', 'setup'], at(FRESH));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: namespace ${FRESH} does not exist: create it (\`dctx temporal setup --create-namespace\``,
    );
  });

  it('a worker refuses a fresh namespace without the search attributes, naming them and the fix', async () => {
    await connection.workflowService.registerNamespace({
      namespace: FRESH,
      workflowExecutionRetentionPeriod: { seconds: 86_400 as never },
    });
    // A namespace just registered reaches the operator service within its cache refresh.
    for (let tries = 0; ; tries++) {
      try {
        await connection.operatorService.listSearchAttributes({ namespace: FRESH });
        break;
      } catch (err) {
        if (tries > 120) throw err;
        await sleep(500);
      }
    }
    const refused = startWorker(FRESH);
    expect(await refused.exit).toBe(1);
    expect(refused.output()).toContain(
      `search attributes not registered in namespace ${FRESH}: ${SEARCH_ATTRIBUTES.map((a) => a.name).join(', ')}; ` +
        'run `dctx temporal setup` with the same TEMPORAL_* environment',
    );
    expect(refused.output()).not.toContain('Worker polling');
  });

  it('registers each search attribute on the fresh namespace, then changes nothing', async () => {
    const first = await runDctx(['temporal', 'setup'], at(FRESH));
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout.split('\n')).toEqual([
      `Temporal: ${inject('temporalAddress')}, namespace ${FRESH} (plaintext)`,
      `namespace ${FRESH}: exists`,
      ...SEARCH_ATTRIBUTES.map((a) => `search attribute ${a.name} (${a.type}): added`),
      '8 search attribute(s) added, 0 already registered',
      '',
    ]);
    expect(await registered(FRESH)).toEqual(EXPECTED);

    const again = await runDctx(['temporal', 'setup'], at(FRESH));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to do: all 8 search attributes already registered');
    expect(await registered(FRESH)).toEqual(EXPECTED);
  });

  it('the worker then starts on it, says where it polls, and stops on SIGTERM with exit code 0', async () => {
    const started = startWorker(FRESH);
    await started.expectOutput(
      new RegExp(
        `Worker polling task queue 'conversations' on ${inject('temporalAddress')}, namespace ${FRESH} \\(plaintext\\)`,
      ),
    );
    started.child.kill('SIGTERM');
    expect(await started.exit).toBe(0);
  });

  it('a bad TLS setting exits 1 with one line naming the variables, before any connection', async () => {
    const pair = await runDctx(['temporal', 'setup'], { ...at(FRESH), TEMPORAL_TLS_CERT: '/etc/temporal/client.pem' });
    expect(pair.code).toBe(1);
    expect(pair.stderr).toBe(
      'error: Invalid environment: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY: a client certificate needs its private key: ' +
        'TEMPORAL_TLS_CERT is set, TEMPORAL_TLS_KEY is not\n',
    );
    const unreadable = await runDctx(['temporal', 'setup'], { ...at(FRESH), TEMPORAL_TLS_CA: '/nonexistent/ca.pem' });
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toMatch(
      /^error: Invalid environment: TEMPORAL_TLS_CA: cannot read "\/nonexistent\/ca.pem": ENOENT/,
    );
    expect(unreadable.stdout).toBe('');
  });

  it('--create-namespace creates a missing namespace and registers in one go', async () => {
    const run = await runDctx(['temporal', 'setup', '--create-namespace', '--retention-days', '2'], at(CREATED));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`namespace ${CREATED}: created (retention 2 days)`);
    expect(run.stdout).toContain('8 search attribute(s) added, 0 already registered');
    const described = await connection.workflowService.describeNamespace({ namespace: CREATED });
    expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(2 * 86_400);
    expect(await registered(CREATED)).toEqual(EXPECTED);
  });
});
