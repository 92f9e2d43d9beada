// HTTP contract of the admin routes (workers/gateway/routes/admin.ts, admin key): tenants, their API keys (issue, list,
// revoke, rotate; scope `full` or `read`, issue #14 §4) and their policy (any compression.* key of config.yaml,
// snake_case, and the request limits under `limits`; validated by infra/config/tenantPolicy.ts).

import { type Static, Type } from 'typebox';
import { isoDateTime, nullable, openObject, stringEnum, text } from './common.js';

export const TENANT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
const tenantId = Type.String({ pattern: TENANT_ID_PATTERN });

export const TenantParams = Type.Object({ tenantId });
export const KeyParams = Type.Object({ tenantId, keyId: Type.String({ pattern: '^[0-9a-f]{16}$' }) });

/** What a tenant key may do: `full`, every tenant route; `read`, only the routes that store nothing (GET, search). */
export const KEY_SCOPES = ['full', 'read'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];
const scope = stringEnum(KEY_SCOPES, {
  description: 'full (default): every tenant route; read: GET routes and search',
});

/** Longest overlap of a rotation, or delay of a revocation: 30 days. */
export const MAX_OVERLAP_SECONDS = 30 * 24 * 3600;
const seconds = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_OVERLAP_SECONDS, description });

const policy = openObject(
  'The tenant’s policy override (compression.* keys, snake_case; request limits under `limits`; the context engine under `context.engine`, SPEC §10.3)',
);

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

export const CreateKeyBody = Type.Object(
  { label: Type.Optional(text(200)), scope: Type.Optional(scope) },
  { additionalProperties: false },
);

export const RevokeKeyBody = Type.Object(
  { afterSeconds: Type.Optional(seconds('Revoke this many seconds from now (default 0: at once)')) },
  { additionalProperties: false },
);

export const RotateKeyBody = Type.Object(
  {
    overlapSeconds: Type.Optional(
      seconds('The old key stays valid this many seconds, so clients can switch (default 0: revoked at once)'),
    ),
  },
  { additionalProperties: false },
);

export const PolicyBody = Type.Unsafe<Record<string, unknown>>({ type: 'object' });

// ---- responses ----

export const Tenant = Type.Object(
  { id: Type.String(), name: Type.String(), policy, policyVersion: Type.Integer() },
  { description: 'The tenant (created, or as stored when it existed) and its policy' },
);
export type Tenant = Static<typeof Tenant>;

const issuedKeyFields = {
  id: Type.String(),
  tenantId: Type.String(),
  key: Type.String({ description: 'Shown once; stored hashed' }),
  label: nullable(Type.String()),
  scope,
};

export const IssuedKey = Type.Object(issuedKeyFields, { description: 'The issued API key' });
export type IssuedKey = Static<typeof IssuedKey>;

export const RotatedKey = Type.Object(
  {
    ...issuedKeyFields,
    replaces: Type.String({ description: 'The id of the rotated key' }),
    replacedKeyRevokedAt: Type.String({ format: 'date-time', description: 'When the rotated key stops working' }),
  },
  { description: 'The new key (same label and scope) and when the old one stops working' },
);
export type RotatedKey = Static<typeof RotatedKey>;

export const ListedKey = Type.Object(
  {
    id: Type.String(),
    label: nullable(Type.String()),
    scope,
    createdAt: isoDateTime,
    revokedAt: nullable(isoDateTime),
    replaces: nullable(Type.String({ description: 'The key this one replaced by a rotation' })),
  },
  { description: 'A key (never the key itself or its hash); revokedAt in the future: valid until then' },
);
export type ListedKey = Static<typeof ListedKey>;

export const KeyList = Type.Object({ keys: Type.Array(ListedKey) }, { description: 'The tenant’s keys, oldest first' });
export type KeyList = Static<typeof KeyList>;

export const TenantPolicy = Type.Object(
  { tenantId: Type.String(), policy, policyVersion: Type.Integer() },
  { description: 'The stored policy and its version (unchanged when the same policy is stored again)' },
);
export type TenantPolicy = Static<typeof TenantPolicy>;
