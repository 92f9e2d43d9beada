// Activities of the smoke workflow: a real write and read through kysely under the tenant's RLS setting.
import type { Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema.js';
import { withTenant } from '../../infra/db/tenant.js';

export function createSmokeActivities(db: Kysely<Database>) {
  return {
    async writeAndReadBack(tenantId: string, text: string): Promise<{ id: number; content: string | null }> {
      await db
        .insertInto('tenants')
        .values({ id: tenantId, name: tenantId })
        .onConflict((oc) => oc.doNothing())
        .execute();
      return withTenant(db, tenantId, async (tx) => {
        await tx
          .insertInto('sessions')
          .values({ tenant_id: tenantId, id: 's1', conversation_id: 'c1' })
          .onConflict((oc) => oc.doNothing())
          .execute();
        const { id } = await tx
          .insertInto('messages')
          .values({
            tenant_id: tenantId,
            session_id: 's1',
            conversation_id: 'c1',
            role: 'user',
            content: text,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        return tx.selectFrom('messages').select(['id', 'content']).where('id', '=', id).executeTakeFirstOrThrow();
      });
    },
  };
}

export type SmokeActivities = ReturnType<typeof createSmokeActivities>;
