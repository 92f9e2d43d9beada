// Admin routes (admin key): tenants, their API keys and their compression policy. Schemas: contracts/http/admin.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import {
  CreateKeyBody,
  CreateTenantBody,
  IssuedKey,
  PolicyBody,
  Tenant,
  TenantParams,
  TenantPolicy,
} from '../../../contracts/http/admin.js';
import { errorResponses } from '../../../contracts/http/common.js';
import { validateTenantPolicy } from '../../../infra/config/tenantPolicy.js';
import { issueApiKey } from '../../../infra/db/apiKeys.js';
import type { Database } from '../../../infra/db/schema.js';
import { ensureTenant, getTenant, getTenantPolicy, setTenantPolicy } from '../../../infra/db/tenants.js';
import { adminAuth } from '../auth.js';
import { notFound } from '../errors.js';

/** Every admin route: a bad body, no or a wrong admin key, an outage, a fault. */
const adminErrors = [400, 401, 403, 413, 415, 500, 503] as const;

export function adminRoutes(deps: { db: Kysely<Database>; adminKey: string | null }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addHook('preHandler', adminAuth(deps.adminKey));

    app.post(
      '/v1/tenants',
      {
        schema: {
          tags: ['admin'],
          summary: 'Create a tenant (idempotent), optionally with a compression policy',
          body: CreateTenantBody,
          response: { 201: Tenant, ...errorResponses(...adminErrors) },
        },
      },
      async (request, reply) => {
        const { id, name, policy } = request.body;
        if (policy) validateTenantPolicy(policy);
        const tenant = await ensureTenant(deps.db, { id, name: name ?? id });
        const stored = policy ? await setTenantPolicy(deps.db, id, policy) : await getTenantPolicy(deps.db, id);
        return reply.status(201).send({
          id: tenant.id,
          name: tenant.name,
          policy: stored?.policy ?? {},
          policyVersion: stored?.version ?? 0,
        });
      },
    );

    app.post(
      '/v1/tenants/:tenantId/keys',
      {
        schema: {
          tags: ['admin'],
          summary: 'Issue an API key for a tenant (shown once; stored hashed)',
          params: TenantParams,
          body: CreateKeyBody,
          response: { 201: IssuedKey, ...errorResponses(...adminErrors, 404) },
        },
      },
      async (request, reply) => {
        if (!(await getTenant(deps.db, request.params.tenantId)))
          throw notFound(`unknown tenant '${request.params.tenantId}'`);
        const issued = await issueApiKey(deps.db, request.params.tenantId, request.body?.label ?? null);
        return reply.status(201).send(issued);
      },
    );

    app.put(
      '/v1/tenants/:tenantId/policy',
      {
        schema: {
          tags: ['admin'],
          summary: 'Replace the tenant compression policy (any compression.* key of config.yaml, snake_case)',
          params: TenantParams,
          body: PolicyBody,
          response: { 200: TenantPolicy, ...errorResponses(...adminErrors, 404) },
        },
      },
      async (request) => {
        if (!(await getTenant(deps.db, request.params.tenantId)))
          throw notFound(`unknown tenant '${request.params.tenantId}'`);
        validateTenantPolicy(request.body);
        const stored = await setTenantPolicy(deps.db, request.params.tenantId, request.body);
        return { tenantId: request.params.tenantId, policy: stored.policy, policyVersion: stored.version };
      },
    );
  };
}
