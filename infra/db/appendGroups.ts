// Batches that arrive while the write pool is busy are committed together (issue #11 §1, DESIGN.md §3, §4; the
// transactions themselves: groupTransactions.ts): one transaction holds the appends of several conversations, of any
// tenants, each exactly as it would run alone (conversationAppend.ts `appendInTransaction`) and under its own tenant,
// so a group costs one BEGIN, one COMMIT (one WAL flush) and two flights — every batch's lock and reads, then every
// batch's writes with the COMMIT — where the batches alone cost two flights and a COMMIT each (`bench:load` figures:
// README, "PostgreSQL").
//
// - Accepted = committed still: a batch's promise settles after the group's COMMIT answered.
// - Nothing waits to be grouped: a batch starts at once while fewer than `slots` transactions run; only the batches
//   that arrive while every slot is busy wait, and the next free slot takes the oldest of them together, whatever
//   their tenants: first come, first committed (groups of one tenant each made a batch that just missed its tenant's
//   group wait for every other tenant's group, and, over many tenants, left nothing to group). A group stays within
//   64 messages and 32,768 estimated tokens, so a large batch never holds up many small ones.
// - Tenants: each batch's statements run with its own tenant set (tenant.ts `tenantSwitch` between batches of two
//   tenants), so row-level security scopes every statement to the tenant of the batch it belongs to, as in a
//   transaction of its own. Every statement also names its tenant, so one run under another tenant's setting could
//   only fail: its reads would find nothing (the batch refused as not found), its writes would be refused.
// - Order: batches of one conversation run in arrival order, never two in one group nor in two groups at once; a
//   group takes its conversations' locks in (tenant, conversation) order, so two groups cannot deadlock on them.
// - Isolation of failures: a batch refused before it queued anything (an idempotency conflict, a conversation or
//   session gone) fails alone and the group goes on. Any other failure rolls the group back, and each of its batches
//   then runs alone as it would have (its own transaction and retries): one batch can never fail another. A group
//   is tried once and waits at most GROUP_LOCK_TIMEOUT_MS for a lock: a conflict, or one conversation's row held by
//   another writer, sends its batches to their own transactions rather than making them all wait or retry. Each of
//   those is a new transaction (without the others), run at once and retried as SPEC §13.6 says, up to 15 times.
// - A held row holds up only its own conversation: a batch alone (a group of one, or of a group rolled back) is tried
//   once in its slot, waiting at most GROUP_LOCK_TIMEOUT_MS for a lock; one that meets a lock another writer holds
//   (a tenant's erasure, a compaction's commit) or a conflict is held: it is tried again outside the slots, while the
//   slots go on with the other batches, by at most `lockWaiters` at once (each attempt holds a connection), each
//   attempt waiting at most `heldLockTimeoutMs` after SPEC §13.6's sleep, and going to the back of the held ones when
//   it meets the lock again, so a row held for long never holds up a batch whose row was held briefly. Its
//   conversation's later batches stay behind it. A batch still held after `heldDeadlineMs` fails with the lock
//   timeout (503 with Retry-After at the gateway): nothing of it was stored.
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { estimateMessagesTokensRough } from '../../engine/tokens.js';
import { type AppendItem, type AppendResult, validateItems } from './conversationAppend.js';
import { appendOnce, commitTogether, conversationKey, type GroupableOptions, type Job } from './groupTransactions.js';
import type { Database } from './schema.js';
import { isRetryableWriteError, retrySleepMs, sqlState } from './writeRetry.js';

export { GROUP_LOCK_TIMEOUT_MS, type GroupableOptions } from './groupTransactions.js';

export interface AppendGroupsOptions {
  /** The write pool's size: never more transactions at once than it has connections (unset: not known). */
  connections?: number;
  /** How many append transactions run at once (default `defaultSlots(connections)`). */
  slots?: number;
  /** The most batches one transaction holds. */
  maxGroup?: number;
  /** The most messages a group of several batches holds (a larger batch runs alone). */
  maxGroupMessages?: number;
  /** The most estimated tokens (SPEC §3) a group of several batches holds (a larger batch runs alone). */
  maxGroupTokens?: number;
  /** Told the number of batches of each transaction (1: a batch alone), as it starts. */
  onTransaction?: (batches: number) => void;
  /** Told why a group was rolled back, its batches then running alone. */
  onDissolved?: (reason: DissolvedReason) => void;
  /**
   * How many held batches (their conversation's row held by another writer, or a conflict) are tried at once, outside
   * the slots (default `defaultLockWaiters(connections, slots)`).
   */
  lockWaiters?: number;
  /** How long one attempt of a held batch waits for a lock (default HELD_LOCK_TIMEOUT_MS). */
  heldLockTimeoutMs?: number;
  /** How long a batch may stay held before it fails (default HELD_DEADLINE_MS). */
  heldDeadlineMs?: number;
}

/** One attempt of a held batch waits this long for a lock, then lets the next held batch try. */
export const HELD_LOCK_TIMEOUT_MS = 1_000;
/** A batch held this long fails (as the gateway's longest waits do, e.g. `wait: true`): the client tries again. */
export const HELD_DEADLINE_MS = 30_000;

/** Why a group rolled back: a lock another writer held, a conflict (serialization failure, deadlock), else. */
export type DissolvedReason = 'lock_timeout' | 'conflict' | 'error';

const dissolvedReason = (error: unknown): DissolvedReason => {
  const state = sqlState(error);
  if (state === '55P03') return 'lock_timeout';
  return state === '40001' || state === '40P01' ? 'conflict' : 'error';
};

export const DEFAULT_MAX_GROUP = 16;
/**
 * A group holds batches while it stays within 64 messages: 16 batches of a chat backend's usual 1–4 messages, while a
 * large batch (up to 500, contracts/validation.ts) does not make the small ones of its group wait for its rows.
 */
export const DEFAULT_MAX_GROUP_MESSAGES = 64;
/**
 * A group holds batches while it stays within 32,768 estimated tokens (about 128 KB of text): 16 batches of
 * `bench:load`'s sizes (a question and an answer, about 550 tokens) hold 9,000 on average. What a batch costs
 * PostgreSQL grows with its text (the search indexes: a 1 MB message of CJK text took 1.7 s to insert, a 590 KB
 * listing of file names 0.3 s), so one large message in a group would make every other batch of it, of any tenant,
 * wait that long; alone it makes them wait at most a group of this size.
 */
export const DEFAULT_MAX_GROUP_TOKENS = 32_768;

/**
 * As many transactions at once as the machine has cores, within the pool. On 2 cores with PostgreSQL on the same
 * machine, `bench:load` (10,000 conversations, 64 clients) accepted as much with 2 as with 3 or 5, and its status
 * reads during the load stayed fast: fewer write transactions leave the reads their share of the CPU, and each holds
 * more batches. Groups of one tenant: 2 slots 1,939–2,066 msg/s, status p99 16–23 ms; 3 slots 1,980–2,163, 21–56
 * ms; 5 slots 1,922–2,077, 26–70 ms. Groups of any tenants: 2 slots 1,956–2,278 msg/s, accept p99 84–101 ms,
 * status p99 18–32 ms (69 in one run of nine); 3 slots 2,042–2,085, accept p99 108–114 ms, status p99 38–46 ms.
 */
export const defaultSlots = (connections = Number.POSITIVE_INFINITY) =>
  Math.max(1, Math.min(connections, availableParallelism()));

/**
 * The write pool's connections beyond the slots, one left for the other writers of the process (chat turns): each
 * batch waiting for a held row holds a connection. At least one; the slots' number when the pool's size is unknown.
 */
export const defaultLockWaiters = (connections: number | undefined, slots: number) =>
  Math.max(1, connections === undefined ? slots : connections - slots - 1);

const tokensOf = (job: Job) => (job.tokens ??= estimateMessagesTokensRough(job.items.map((item) => item.message)));

/**
 * The gateway's appends of plain batches (workers/gateway/batchAppend.ts): each starts at once while fewer than
 * `slots` run; the ones that arrive meanwhile wait, and the next free slot takes the oldest of them, whatever their
 * tenants (one per conversation, at most `maxGroup`), into one transaction.
 */
export class AppendGroups {
  private readonly queue: Job[] = [];
  /** Conversations with a batch in a running transaction. */
  private readonly busy = new Set<string>();
  private running = 0;
  private readonly slots: number;
  private readonly maxGroup: number;
  private readonly maxGroupMessages: number;
  private readonly maxGroupTokens: number;
  private readonly onTransaction: ((batches: number) => void) | undefined;
  private readonly onDissolved: ((reason: DissolvedReason) => void) | undefined;
  /** Held batches waiting for their next attempt, oldest first, and when each was first held. */
  private readonly held: Job[] = [];
  private readonly heldSince = new Map<Job, number>();
  private lockWaiting = 0;
  private readonly lockWaiters: number;
  private readonly heldLockTimeoutMs: number;
  private readonly heldDeadlineMs: number;

  constructor(
    private readonly db: Kysely<Database>,
    options: AppendGroupsOptions,
  ) {
    this.slots = Math.max(1, Math.floor(options.slots ?? defaultSlots(options.connections)));
    this.maxGroup = Math.max(1, Math.floor(options.maxGroup ?? DEFAULT_MAX_GROUP));
    this.maxGroupMessages = Math.max(1, Math.floor(options.maxGroupMessages ?? DEFAULT_MAX_GROUP_MESSAGES));
    this.maxGroupTokens = Math.max(1, Math.floor(options.maxGroupTokens ?? DEFAULT_MAX_GROUP_TOKENS));
    this.onTransaction = options.onTransaction;
    this.onDissolved = options.onDissolved;
    this.lockWaiters = Math.max(
      1,
      Math.floor(options.lockWaiters ?? defaultLockWaiters(options.connections, this.slots)),
    );
    this.heldLockTimeoutMs = Math.max(1, options.heldLockTimeoutMs ?? HELD_LOCK_TIMEOUT_MS);
    this.heldDeadlineMs = Math.max(0, options.heldDeadlineMs ?? HELD_DEADLINE_MS);
  }

  /** conversationAppend.ts `appendToConversation`, maybe in one transaction with other conversations' batches. */
  append(
    tenantId: string,
    conversationId: string,
    items: readonly AppendItem[],
    options: GroupableOptions = {},
  ): Promise<AppendResult> {
    validateItems(items);
    return new Promise((resolve, reject) => {
      this.queue.push({ tenantId, conversationId, items, options, resolve, reject });
      this.pump();
    });
  }

  /** Batches waiting for a slot (for tests and metrics). */
  get waiting(): number {
    return this.queue.length;
  }

  private pump(): void {
    while (this.running < this.slots) {
      const group = this.take();
      if (group.length === 0) return;
      this.running++;
      for (const job of group) this.claim(job);
      void this.run(group).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /**
   * Marks the job's conversation busy until the job settles (committed, refused or failed), whatever its slot does.
   * It settles once; the next group is taken after the settling code has run.
   */
  private claim(job: Job): void {
    const key = conversationKey(job);
    this.busy.add(key);
    const { resolve, reject } = job;
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      this.busy.delete(key);
      queueMicrotask(() => this.pump());
      return true;
    };
    job.resolve = (result) => {
      if (settle()) resolve(result);
    };
    job.reject = (error) => {
      if (settle()) reject(error);
    };
  }

  /**
   * The oldest waiting batches whose conversations have none running, one per conversation, within
   * `maxGroupMessages` and `maxGroupTokens` (the first one whatever its size). A batch passed over keeps its place,
   * the oldest of the next group if it is the oldest left: its conversation's later batches are passed over too, so
   * they stay behind it. Tokens are estimated only once a second batch is weighed (a batch that starts at once alone
   * costs no estimate).
   */
  private take(): Job[] {
    const group: Job[] = [];
    const passed = new Set<string>();
    let messages = 0;
    let tokens: number | undefined;
    /** The group's tokens: its first batch's, estimated once a second one is weighed, then each added one's. */
    const groupTokens = () => {
      tokens ??= tokensOf(group[0]!);
      return tokens;
    };
    const fits = (job: Job) =>
      group.length === 0 ||
      (messages + job.items.length <= this.maxGroupMessages && groupTokens() + tokensOf(job) <= this.maxGroupTokens);
    for (let i = 0; i < this.queue.length && group.length < this.maxGroup; ) {
      // Full: no batch would fit (each has a message and some tokens).
      if (group.length > 0 && (messages >= this.maxGroupMessages || groupTokens() >= this.maxGroupTokens)) break;
      const job = this.queue[i]!;
      const key = conversationKey(job);
      if (this.busy.has(key) || passed.has(key) || !fits(job)) {
        passed.add(key);
        i++;
        continue;
      }
      passed.add(key);
      group.push(job);
      messages += job.items.length;
      if (tokens !== undefined) tokens += tokensOf(job);
      this.queue.splice(i, 1);
    }
    return group;
  }

  private async run(group: readonly Job[]): Promise<void> {
    this.onTransaction?.(group.length);
    if (group.length === 1) return this.alone(group[0]!);
    try {
      await commitTogether(this.db, group);
    } catch (error) {
      // Rolled back: each batch again on its own, as it would have run without the others.
      this.onDissolved?.(dissolvedReason(error));
      for (const _ of group) this.onTransaction?.(1);
      await Promise.all(group.map((job) => this.alone(job)));
    }
  }

  /**
   * A batch in its own transaction, in the slot: tried once, waiting at most GROUP_LOCK_TIMEOUT_MS for a lock. Met
   * with a lock another writer holds (or a conflict), it is held, and the slot is free again.
   */
  private async alone(job: Job): Promise<void> {
    try {
      job.resolve(await appendOnce(this.db, job));
    } catch (error) {
      this.hold(job, error);
    }
  }

  /** A batch whose attempt failed: held for another (a retryable failure, within its deadline), else failed. */
  private hold(job: Job, error: unknown): void {
    const since = this.heldSince.get(job) ?? Date.now();
    if (!isRetryableWriteError(error) || Date.now() - since >= this.heldDeadlineMs) {
      this.heldSince.delete(job);
      job.reject(error);
      return;
    }
    this.heldSince.set(job, since);
    this.held.push(job);
    this.tryHeld();
  }

  /** The held batches' next attempts, oldest first, at most `lockWaiters` at once. */
  private tryHeld(): void {
    while (this.lockWaiting < this.lockWaiters && this.held.length > 0) {
      const job = this.held.shift()!;
      this.lockWaiting++;
      void this.tryHeldOnce(job).finally(() => {
        this.lockWaiting--;
        this.tryHeld();
      });
    }
  }

  /** One attempt of a held batch, after SPEC §13.6's sleep, waiting at most `heldLockTimeoutMs` for a lock. */
  private async tryHeldOnce(job: Job): Promise<void> {
    await sleep(retrySleepMs(Math.random));
    try {
      const result = await appendOnce(this.db, job, this.heldLockTimeoutMs);
      this.heldSince.delete(job);
      job.resolve(result);
    } catch (error) {
      this.hold(job, error);
    }
  }
}
