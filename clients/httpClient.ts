// The gateway's typed HTTP client (DESIGN.md §2 clients/), used by `dctx`, the demo and import: one function per
// route over global fetch, typed with the request and response types of contracts/http (the routes' own schemas),
// errors as GatewayError carrying the gateway's message.
import type {
  CreateTenantBody,
  IssuedKey,
  KeyList,
  KeyScope,
  ListedKey,
  RotatedKey,
  Tenant,
  TenantPolicy,
} from '../contracts/http/admin.js';
import type { CompactionList, ReplayResult } from '../contracts/http/compactions.js';
import type {
  AcceptedMessages,
  CreateConversationBody,
  CreatedConversation,
  PostMessagesBody,
  PreparedContext,
  ProcessedMessages,
  StoredMessages,
} from '../contracts/http/conversations.js';
import type { SwitchModelBody } from '../contracts/http/modelSwitch.js';
import type { Healthy } from '../contracts/http/ops.js';
import type { SearchBody, SearchResults } from '../contracts/http/search.js';
import type { CompactionReport, ConversationStatusBody, PublishedStatus } from '../contracts/http/status.js';

export type { CompactionSummary } from '../contracts/http/compactions.js';
export type { SearchResult } from '../contracts/http/search.js';
export type { CompactionList, CompactionReport, ConversationStatusBody, PublishedStatus, ReplayResult };

/** Where the gateway is and which bearer key to send (a tenant key `dctx_...` or the admin key). */
export interface GatewayConnection {
  url: string;
  key: string;
  /** Injected in tests; global fetch otherwise. */
  fetch?: typeof fetch;
}

/** A failed request: `statusCode` is the HTTP status (0 when the gateway could not be reached). */
export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Statuses worth a retry: unreachable, rate limited, upstream and outage answers. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([0, 429, 502, 503, 504]);

async function call<T>(conn: GatewayConnection, method: string, path: string, body?: unknown): Promise<T> {
  const url = `${conn.url.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    res = await (conn.fetch ?? fetch)(url, {
      method,
      headers: {
        authorization: `Bearer ${conn.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new GatewayError(0, `cannot reach the gateway at ${conn.url} (${detail}); is it running? (dctx start)`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: handled below
  }
  if (!res.ok) {
    const message = (json as { message?: unknown } | null)?.message;
    throw new GatewayError(
      res.status,
      typeof message === 'string' && message ? message : `HTTP ${res.status} ${res.statusText}`.trim(),
    );
  }
  return json as T;
}

const query = (params: Record<string, string | number | boolean | undefined>): string => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
};
const seg = encodeURIComponent;

// ---- admin (admin key) ----

export function createTenant(conn: GatewayConnection, tenant: CreateTenantBody): Promise<Tenant> {
  return call(conn, 'POST', '/v1/tenants', tenant);
}

export function createApiKey(
  conn: GatewayConnection,
  tenantId: string,
  options: { label?: string; scope?: KeyScope } = {},
): Promise<IssuedKey> {
  return call(conn, 'POST', `/v1/tenants/${seg(tenantId)}/keys`, options);
}

export function listApiKeys(conn: GatewayConnection, tenantId: string): Promise<KeyList> {
  return call(conn, 'GET', `/v1/tenants/${seg(tenantId)}/keys`);
}

export function revokeApiKey(
  conn: GatewayConnection,
  tenantId: string,
  keyId: string,
  afterSeconds = 0,
): Promise<ListedKey> {
  return call(conn, 'POST', `/v1/tenants/${seg(tenantId)}/keys/${seg(keyId)}/revoke`, { afterSeconds });
}

export function rotateApiKey(
  conn: GatewayConnection,
  tenantId: string,
  keyId: string,
  overlapSeconds = 0,
): Promise<RotatedKey> {
  return call(conn, 'POST', `/v1/tenants/${seg(tenantId)}/keys/${seg(keyId)}/rotate`, { overlapSeconds });
}

export function setTenantPolicy(
  conn: GatewayConnection,
  tenantId: string,
  policy: Record<string, unknown>,
): Promise<TenantPolicy> {
  return call(conn, 'PUT', `/v1/tenants/${seg(tenantId)}/policy`, policy);
}

// ---- conversations (tenant key) ----

export function createConversation(
  conn: GatewayConnection,
  body: CreateConversationBody,
): Promise<CreatedConversation> {
  return call(conn, 'POST', '/v1/conversations', body);
}

/** A batch of messages (chat backend mode, `respond`, is not a client of this module). */
export type PostMessages = Omit<PostMessagesBody, 'respond' | 'tools'>;

/** Stored (202), or stored and processed with the status after it when `wait` is true (200). */
export function postMessages(
  conn: GatewayConnection,
  conversationId: string,
  body: PostMessages,
): Promise<AcceptedMessages | ProcessedMessages> {
  return call(conn, 'POST', `/v1/conversations/${seg(conversationId)}/messages`, body);
}

export function getContext(
  conn: GatewayConnection,
  conversationId: string,
  options: { model?: string; provider?: string } = {},
): Promise<PreparedContext> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/context${query(options)}`);
}

export function compactConversation(
  conn: GatewayConnection,
  conversationId: string,
  focusTopic?: string,
): Promise<CompactionReport> {
  return call(conn, 'POST', `/v1/conversations/${seg(conversationId)}/compact`, focusTopic ? { focusTopic } : {});
}

/** SPEC §4.6: switch the conversation's model; its status right after the switch, notices included. */
export function switchModel(
  conn: GatewayConnection,
  conversationId: string,
  body: SwitchModelBody,
): Promise<ConversationStatusBody> {
  return call(conn, 'POST', `/v1/conversations/${seg(conversationId)}/model`, body);
}

export function getStatus(conn: GatewayConnection, conversationId: string): Promise<PublishedStatus> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/status`);
}

export function listMessages(
  conn: GatewayConnection,
  conversationId: string,
  options: { archived?: boolean } = {},
): Promise<StoredMessages> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/messages${query({ archived: options.archived })}`);
}

// ---- compactions (tenant key) ----

export function listCompactions(
  conn: GatewayConnection,
  options: { status?: string[]; limit?: number; offset?: number } = {},
): Promise<CompactionList> {
  const status = options.status?.length ? options.status.join(',') : undefined;
  return call(conn, 'GET', `/v1/compactions${query({ status, limit: options.limit, offset: options.offset })}`);
}

export function replayCompaction(conn: GatewayConnection, compactionId: string): Promise<ReplayResult> {
  return call(conn, 'POST', `/v1/compactions/${seg(compactionId)}/replay`);
}

// ---- search (tenant key) ----

/** The options of a search (lists as arrays; sent as comma-separated text in the querystring). */
export type SearchOptions = Omit<SearchBody, 'q'>;

export function search(conn: GatewayConnection, q: string, options: SearchOptions = {}): Promise<SearchResults> {
  const params = query({
    q,
    roles: options.roles?.join(','),
    sources: options.sources?.join(','),
    excludeSources: options.excludeSources?.join(','),
    sort: options.sort,
    limit: options.limit,
    offset: options.offset,
    includeInactive: options.includeInactive,
  });
  return call(conn, 'GET', `/v1/search${params}`);
}

// ---- ops (no key) ----

export function health(conn: Pick<GatewayConnection, 'url' | 'fetch'>): Promise<Healthy> {
  return call({ ...conn, key: '' }, 'GET', '/healthz');
}
