// Admin routes (admin key): tenants, their API keys and their compression policy.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { validateTenantPolicy } from '../../../infra/config/tenantPolicy.js';
import { issueApiKey } from '../../../infra/db/apiKeys.js';
import type { Database } from '../../../infra/db/schema.js';
import { ensureTenant, getTenant, getTenantPolicy, setTenantPolicy } from '../../../infra/db/tenants.js';
import { adminAuth } from '../auth.js';
import { notFound } from '../errors.js';
import { errorSchema, textSchema } from '../schemas.js';

const tenantIdParam = {
  type: 'object',
  required: ['tenantId'],
  properties: { tenantId: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' } },
} as const;

export function adminRoutes(deps: { db: Kysely<Database>; adminKey: string | null }) {
  return async (app: FastifyInstance) => {
    app.addHook('preHandler', adminAuth(deps.adminKey));

    app.post<{ Body: { id: string; name?: string; policy?: Record<string, unknown> } }>(
      '/v1/tenants',
      {
        schema: {
          tags: ['admin'],
          summary: 'Create a tenant (idempotent), optionally with a compression policy',
          body: {
            type: 'object',
            required: ['id'],
            additionalProperties: false,
            properties: {
              id: tenantIdParam.properties.tenantId,
              name: textSchema(200, 1),
              policy: { type: 'object' },
            },
          },
          response: { 201: { type: 'object', additionalProperties: true }, 400: errorSchema },
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

    app.post<{ Params: { tenantId: string }; Body: { label?: string } }>(
      '/v1/tenants/:tenantId/keys',
      {
        schema: {
          tags: ['admin'],
          summary: 'Issue an API key for a tenant (shown once; stored hashed)',
          params: tenantIdParam,
          body: {
            type: 'object',
            additionalProperties: false,
            properties: { label: textSchema(200) },
          },
        },
      },
      async (request, reply) => {
        if (!(await getTenant(deps.db, request.params.tenantId)))
          throw notFound(`unknown tenant '${request.params.tenantId}'`);
        const issued = await issueApiKey(deps.db, request.params.tenantId, request.body?.label ?? null);
        return reply.status(201).send(issued);
      },
    );

    app.put<{ Params: { tenantId: string }; Body: Record<string, unknown> }>(
      '/v1/tenants/:tenantId/policy',
      {
        schema: {
          tags: ['admin'],
          summary: 'Replace the tenant compression policy (any compression.* key of config.yaml, snake_case)',
          params: tenantIdParam,
          body: { type: 'object' },
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
