// HTTP contract of the admin routes (workers/gateway/routes/admin.ts, admin key): tenants, their API keys and their
// compression policy (any compression.* key of config.yaml, snake_case; validated by infra/config/tenantPolicy.ts).

import { type Static, Type } from 'typebox';
import { openObject, text } from './common.js';

export const TENANT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
const tenantId = Type.String({ pattern: TENANT_ID_PATTERN });

export const TenantParams = Type.Object({ tenantId });

const policy = openObject('The tenant’s compression policy override (compression.* keys, snake_case)');

// ---- requests ----

export const CreateTenantBody = Type.Object(
  {
    id: tenantId,
    name: Type.Optional(text(200, 1)),
    policy: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object' })),
  },
  { additionalProperties: false },
);
export type CreateTenantBody = Static<typeof CreateTenantBody>;

export const CreateKeyBody = Type.Object({ label: Type.Optional(text(200)) }, { additionalProperties: false });

export const PolicyBody = Type.Unsafe<Record<string, unknown>>({ type: 'object' });

// ---- responses ----

export const Tenant = Type.Object(
  { id: Type.String(), name: Type.String(), policy, policyVersion: Type.Integer() },
  { description: 'The tenant (created, or as stored when it existed) and its policy' },
);
export type Tenant = Static<typeof Tenant>;

export const IssuedKey = Type.Object(
  { id: Type.String(), tenantId: Type.String(), key: Type.String({ description: 'Shown once; stored hashed' }) },
  { description: 'The issued API key' },
);
export type IssuedKey = Static<typeof IssuedKey>;

export const TenantPolicy = Type.Object(
  { tenantId: Type.String(), policy, policyVersion: Type.Integer() },
  { description: 'The stored policy and its version (unchanged when the same policy is stored again)' },
);
export type TenantPolicy = Static<typeof TenantPolicy>;
