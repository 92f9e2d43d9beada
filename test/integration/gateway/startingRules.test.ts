// The rules a new conversation starts with (workers/gateway/startingRules.ts, issue #11 §2): its tenant's policy as
// the workflow resolves it, none without the deployment's configuration, and none — the workflow then decides with
// the deployment's own, as its activity does — for a stored policy that no longer validates, instead of refusing to
// create the conversation.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { normalizeCompressionConfig } from '../../../engine/index.js';
import { ensureTenant, setTenantPolicy } from '../../../infra/db/tenants.js';
import { startingRules } from '../../../workers/gateway/startingRules.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

const WINDOW = { model: 'acme-chat', provider: null, contextLength: 1_000_000 };
const BASE = { baseConfig: normalizeCompressionConfig({}) };

describe('startingRules', () => {
  it('follow the tenant policy; none without a base configuration or with a policy that no longer validates', async () => {
    await ensureTenant(testDb.db, { id: 'rules-a', name: 'rules-a' });
    const defaults = await startingRules(testDb.db, BASE, 'rules-a', WINDOW);
    await setTenantPolicy(testDb.db, 'rules-a', { threshold: 0.25 });
    const tenant = await startingRules(testDb.db, BASE, 'rules-a', WINDOW);
    // Half the default share of the same window (SPEC §6.1: 0.5).
    expect(tenant?.thresholdTokens).toBe((defaults?.thresholdTokens ?? 0) / 2);
    expect(await startingRules(testDb.db, {}, 'rules-a', WINDOW)).toBeNull();

    // Written before a stricter release: the store has it, the validation now refuses it.
    await testDb.db
      .updateTable('tenants')
      .set({ policy: JSON.stringify({ threshold: 7 }) })
      .where('id', '=', 'rules-a')
      .execute();
    expect(await startingRules(testDb.db, BASE, 'rules-a', WINDOW)).toBeNull();
  });
});
