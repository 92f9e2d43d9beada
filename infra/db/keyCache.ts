// The tenant keys a gateway resolved, kept while PostgreSQL can tell it that one changed (issue #11: a key looked up
// on every request was a third of the machine's CPU per status read). Every change of a key or of its tenant sends
// `NOTIFY dc_keys, '<tenant id>'` from a trigger (migrations/0025), whoever makes it; this process LISTENs on one
// connection of its own and forgets the tenant's keys when one arrives. The gateway that revokes forgets at once
// (forgetTenant, before it answers); another one when the notice reaches it, a few milliseconds after the commit.
//
// What keeps it exact:
// - nothing is kept while the listening connection is not up: every request looks its key up, as without the cache;
//   losing the connection forgets everything, and a new one starts empty once it listens;
// - a lookup that was in flight when a notice arrived is not kept (it may have read the key before the change);
// - a key with a scheduled revocation (a rotation's overlap) is never kept: it stops working at a time, without a
//   notice; neither is an unknown key (a 401 is looked up again);
// - an entry lives at most `ttlMs`, in case notices stop arriving on a connection that still looks up.
import type { Kysely } from 'kysely';
import pg from 'pg';
import { presentedKeyHash, type ResolvedKey, resolveKeyHash } from './apiKeys.js';
import type { Database } from './schema.js';

/** The channel migrations/0025 notifies on. */
export const KEYS_CHANNEL = 'dc_keys';
/** The listening connection's application_name (pg_stat_activity). */
export const KEY_LISTENER_NAME = 'dc-key-listener';

export interface KeyCacheOptions {
  /** How long a resolved key is kept at most (default 10 s). */
  ttlMs?: number;
  /** How many keys are kept at most (default 10,000; the oldest go first). */
  maxEntries?: number;
  /** Wait before listening again after the connection was lost (default 1 s). */
  reconnectMs?: number;
  /** The channel it listens on (default KEYS_CHANNEL, where migrations/0025 notifies). */
  channel?: string;
  now?: () => number;
}

export class KeyCache {
  private readonly entries = new Map<string, { key: ResolvedKey; at: number }>();
  /** Bumped by every notice and every loss of the connection: a lookup begun before one is not kept. */
  private generation = 0;
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly reconnectMs: number;
  private readonly channel: string;
  private readonly now: () => number;
  /** Requests answered from the cache, and keys looked up in PostgreSQL (counted for the tests). */
  hits = 0;
  lookups = 0;

  constructor(
    private readonly connectionString: string,
    options: KeyCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.reconnectMs = options.reconnectMs ?? 1_000;
    this.channel = options.channel ?? KEYS_CHANNEL;
    this.now = options.now ?? (() => performance.now());
  }

  /** Listening: resolved keys may be kept. */
  get live(): boolean {
    return this.client !== null;
  }

  /**
   * Opens the listening connection. Never throws: while it is down every key is looked up, and it is tried again
   * every `reconnectMs`.
   */
  async start(): Promise<void> {
    if (this.closed || this.client) return;
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: KEY_LISTENER_NAME,
      keepAlive: true,
    });
    const lost = () => {
      if (this.client === client) this.client = null;
      this.forgetAll();
      client.end().catch(() => undefined);
      this.scheduleRetry();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.forgetTenant(message.payload ?? null);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch {
      lost();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    // Anything kept before (there is nothing, unless a notice could have been missed) is forgotten.
    this.forgetAll();
    this.client = client;
  }

  /** The key of a request, if it is valid now (resolveApiKey), from the cache while that is exact. */
  async resolve(db: Kysely<Database>, key: string): Promise<ResolvedKey | null> {
    const hash = presentedKeyHash(key);
    if (hash === null) return null;
    if (!this.client) {
      this.lookups += 1;
      return resolveKeyHash(db, hash);
    }
    const kept = this.entries.get(hash);
    if (kept && this.now() - kept.at < this.ttlMs) {
      this.hits += 1;
      return kept.key;
    }
    if (kept) this.entries.delete(hash);
    const generation = this.generation;
    this.lookups += 1;
    const found = await resolveKeyHash(db, hash);
    if (found && !found.expires && this.client && generation === this.generation) {
      if (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
      this.entries.set(hash, { key: found, at: this.now() });
    }
    return found;
  }

  /** Forgets the keys of `tenantId` (every key when null: a notice without a tenant). */
  forgetTenant(tenantId: string | null): void {
    this.generation += 1;
    if (tenantId === null) {
      this.entries.clear();
      return;
    }
    for (const [hash, entry] of this.entries) if (entry.key.tenantId === tenantId) this.entries.delete(hash);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    this.forgetAll();
    await client?.end().catch(() => undefined);
  }

  private forgetAll(): void {
    this.generation += 1;
    this.entries.clear();
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.start();
    }, this.reconnectMs);
    this.retry.unref();
  }
}
