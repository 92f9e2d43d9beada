// Proves the real parts work together: a workflow on the real Temporal dev server runs an activity that writes a
// row to the real PostgreSQL through kysely and reads it back.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes.js';
import { createTestDatabase, type TestDatabase } from '../support/harness/db.js';
import { createSmokeActivities } from './smoke-activities.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

describe('real Temporal + real PostgreSQL', () => {
  it('runs a workflow whose activity writes a row through kysely and reads it back', async () => {
    const address = inject('temporalAddress');
    const namespace = inject('temporalNamespace');
    const taskQueue = `smoke-${randomUUID()}`;
    const nativeConnection = await NativeConnection.connect({ address });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('../support/fixtures/workflows/smoke.ts', import.meta.url)),
      activities: createSmokeActivities(testDb.db),
    });
    const connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace });
    try {
      const result = await worker.runUntil(
        client.workflow.execute('smokeWorkflow', {
          taskQueue,
          workflowId: `smoke-${randomUUID()}`,
          args: ['tenant-smoke', 'コンテキストの圧縮'],
        }),
      );
      expect(result.content).toBe('コンテキストの圧縮');
      const row = await testDb.db
        .selectFrom('messages')
        .select(['tenant_id', 'content'])
        .where('id', '=', result.id)
        .executeTakeFirst();
      expect(row).toEqual({ tenant_id: 'tenant-smoke', content: 'コンテキストの圧縮' });
    } finally {
      await connection.close();
      await nativeConnection.close();
    }
  });

  it('has the search attributes of DESIGN.md §3 registered', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const listed = await connection.operatorService.listSearchAttributes({ namespace: inject('temporalNamespace') });
      for (const sa of SEARCH_ATTRIBUTES) expect(Object.keys(listed.customAttributes ?? {})).toContain(sa.name);
    } finally {
      await connection.close();
    }
  });
});
