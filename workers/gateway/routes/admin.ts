// Admin routes (admin key): tenants, their API keys (issue, list, revoke, rotate — issue #14 §4) and their policy.
// Schemas: contracts/http/admin.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import {
  CreateKeyBody,
  CreateTenantBody,
  IssuedKey,
  KeyList,
  KeyParams,
  ListedKey,
  PolicyBody,
  RevokeKeyBody,
  RotatedKey,
  RotateKeyBody,
  Tenant,
  TenantParams,
  TenantPolicy,
} from '../../../contracts/http/admin.js';
import { errorResponses } from '../../../contracts/http/common.js';
import { validateTenantPolicy } from '../../../infra/config/tenantPolicy.js';
import {
  issueApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  type ListedKey as StoredKey,
} from '../../../infra/db/apiKeys.js';
import type { KeyCache } from '../../../infra/db/keyCache.js';
import type { Database } from '../../../infra/db/schema.js';
import { ensureTenant, getTenant, getTenantPolicy, setTenantPolicy } from '../../../infra/db/tenants.js';
import { adminAuth, adminKeysOf, forgetKeysOnWrite } from '../auth.js';
import { HttpError, notFound } from '../errors.js';

/** Every admin route: a bad body, no or a wrong admin key, an outage, a fault. */
const adminErrors = [400, 401, 403, 413, 415, 500, 503] as const;

export interface AdminRouteDeps {
  db: Kysely<Database>;
  adminKey: string | null;
  /** The admin key being rotated out: valid beside `adminKey` until it is unset. */
  previousAdminKey?: string | null;
  /** The tenant keys this gateway keeps: forgotten by every change made here (auth.ts forgetKeysOnWrite). */
  keys?: KeyCache;
}

/** A POST without a body (`curl -X POST …/revoke`) means the defaults: validated as `{}`. */
const noBodyAsEmpty = async (request: FastifyRequest) => {
  request.body ??= {};
};

const wire = (key: StoredKey) => ({
  ...key,
  createdAt: key.createdAt.toISOString(),
  revokedAt: key.revokedAt?.toISOString() ?? null,
});

export function adminRoutes(deps: AdminRouteDeps): FastifyPluginAsyncTypebox {
  const adminKeys = adminKeysOf(deps);
  const knownTenant = async (tenantId: string) => {
    if (!(await getTenant(deps.db, tenantId))) throw notFound(`unknown tenant '${tenantId}'`);
  };
  return async (app) => {
    forgetKeysOnWrite(app, deps.keys);
    app.addHook('preHandler', adminAuth(adminKeys));

    app.post(
      '/v1/tenants',
      {
        schema: {
          tags: ['admin'],
          summary: 'Create a tenant (idempotent), optionally with a policy',
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
        preValidation: noBodyAsEmpty,
        schema: {
          tags: ['admin'],
          summary: 'Issue an API key for a tenant (shown once; stored hashed); scope full (default) or read',
          params: TenantParams,
          body: CreateKeyBody,
          response: { 201: IssuedKey, ...errorResponses(...adminErrors, 404) },
        },
      },
      async (request, reply) => {
        await knownTenant(request.params.tenantId);
        const { label, scope } = request.body;
        const issued = await issueApiKey(deps.db, request.params.tenantId, label ?? null, scope ?? 'full');
        return reply.status(201).send(issued);
      },
    );

    app.get(
      '/v1/tenants/:tenantId/keys',
      {
        schema: {
          tags: ['admin'],
          summary: 'List a tenant’s API keys (id, label, scope, created, revoked — never the key or its hash)',
          params: TenantParams,
          response: { 200: KeyList, ...errorResponses(400, 401, 403, 404, 500, 503) },
        },
      },
      async (request) => {
        await knownTenant(request.params.tenantId);
        return { keys: (await listApiKeys(deps.db, request.params.tenantId)).map(wire) };
      },
    );

    app.post(
      '/v1/tenants/:tenantId/keys/:keyId/revoke',
      {
        preValidation: noBodyAsEmpty,
        schema: {
          tags: ['admin'],
          summary: 'Revoke a key, at once (every route answers 401 to it) or afterSeconds from now',
          params: KeyParams,
          body: RevokeKeyBody,
          response: { 200: ListedKey, ...errorResponses(...adminErrors, 404) },
        },
      },
      async (request) => {
        const { tenantId, keyId } = request.params;
        const revoked = await revokeApiKey(deps.db, tenantId, keyId, request.body.afterSeconds ?? 0);
        if (!revoked) throw notFound(`tenant '${tenantId}' has no key '${keyId}'`);
        return wire(revoked);
      },
    );

    app.post(
      '/v1/tenants/:tenantId/keys/:keyId/rotate',
      {
        preValidation: noBodyAsEmpty,
        schema: {
          tags: ['admin'],
          summary:
            'Rotate a key: a new key with the same label and scope; the old one revoked at once or after ' +
            'overlapSeconds, so clients can switch without downtime',
          params: KeyParams,
          body: RotateKeyBody,
          response: { 201: RotatedKey, ...errorResponses(...adminErrors, 404, 409) },
        },
      },
      async (request, reply) => {
        const { tenantId, keyId } = request.params;
        const rotated = await rotateApiKey(deps.db, tenantId, keyId, request.body.overlapSeconds ?? 0);
        if (rotated === 'unknown') throw notFound(`tenant '${tenantId}' has no key '${keyId}'`);
        if (rotated === 'revoked') throw new HttpError(409, `key '${keyId}' is revoked: issue a new key instead`);
        return reply.status(201).send({
          ...rotated.issued,
          replaces: keyId,
          replacedKeyRevokedAt: rotated.revokedAt.toISOString(),
        });
      },
    );

    app.put(
      '/v1/tenants/:tenantId/policy',
      {
        schema: {
          tags: ['admin'],
          summary:
            'Replace the tenant policy: any compression.* key of config.yaml (snake_case), and request limits under `limits`',
          params: TenantParams,
          body: PolicyBody,
          response: { 200: TenantPolicy, ...errorResponses(...adminErrors, 404) },
        },
      },
      async (request) => {
        await knownTenant(request.params.tenantId);
        validateTenantPolicy(request.body);
        const stored = await setTenantPolicy(deps.db, request.params.tenantId, request.body);
        return { tenantId: request.params.tenantId, policy: stored.policy, policyVersion: stored.version };
      },
    );
  };
}
