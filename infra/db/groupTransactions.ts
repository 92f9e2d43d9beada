// The transactions of grouped appends (appendGroups.ts schedules them; issue #11 §1, DESIGN.md §4): several
// conversations' batches committed together, each under its own tenant, or one batch alone, each tried once with a
// bounded wait for locks, so that a held row sends its batch elsewhere instead of holding up a slot.
import type { Kysely } from 'kysely';
import { type AppendReads, queueAppendReads } from './appendReads.js';
import {
  APPEND_PLANS,
  type AppendInTransaction,
  type AppendItem,
  type AppendOptions,
  type AppendResult,
  appendInTransaction,
  confirmAppend,
  refusedBeforeWrites,
} from './conversationAppend.js';
import { deferredStatement } from './pipelinedTransactions.js';
import type { Database } from './schema.js';
import { tenantSwitch } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

/** What a grouped append may ask (conversationAppend.ts AppendOptions): no turn, no admission check, no `after`. */
export type GroupableOptions = Pick<AppendOptions, 'settle' | 'row'>;

/** A batch waiting for, or in, its transaction; it settles once that transaction has ended. */
export interface Job {
  tenantId: string;
  conversationId: string;
  items: readonly AppendItem[];
  /** Its messages' estimated tokens, once a group weighed it. */
  tokens?: number;
  options: GroupableOptions;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export const conversationKey = (job: Pick<Job, 'tenantId' | 'conversationId'>) =>
  `${job.tenantId}\n${job.conversationId}`;

type Outcome = { appended: AppendInTransaction } | { refused: unknown };

/**
 * How long a group waits for a lock (mostly a conversation's row held by a compaction's commit, a chat turn, another
 * writer; any heavyweight lock counts, e.g. extending a table): then it gives up and its batches run alone, so the
 * others never wait for the one that is held. A group itself takes 20–50 ms under load (`bench:load`), so a wait
 * this long is not one of those.
 */
export const GROUP_LOCK_TIMEOUT_MS = 50;
const lockTimeout = (ms: number) =>
  deferredStatement(`SELECT set_config('lock_timeout', '${Math.max(1, Math.floor(ms))}ms', true)`);
const groupLockTimeout = () => lockTimeout(GROUP_LOCK_TIMEOUT_MS);

/**
 * The jobs (distinct conversations) in one transaction, in (tenant, conversation) order, each under its own tenant;
 * then, committed, each job settles with its own result or refusal. Throws when the transaction failed: nothing of it
 * was stored.
 */
export async function commitTogether(db: Kysely<Database>, jobs: readonly Job[]): Promise<void> {
  const order = [...jobs].sort((a, b) => (conversationKey(a) < conversationKey(b) ? -1 : 1));
  const outcomes = await withTenantWrite(
    db,
    order[0]!.tenantId,
    async (tx) => {
      await tx.executeQuery(groupLockTimeout());
      // The tenant of the statements that follow: a switch is held back and travels, in order, before them.
      let current = order[0]!.tenantId;
      const scope = async (tenantId: string) => {
        if (tenantId === current) return;
        await tx.executeQuery(tenantSwitch(tenantId));
        current = tenantId;
      };
      // One flight for every batch's lock and reads, the last one's sending them all.
      const reads: AppendReads[] = [];
      for (const [i, job] of order.entries()) {
        const keys = job.items.map((item) => item.idempotencyKey);
        await scope(job.tenantId);
        reads.push(await queueAppendReads(tx, job.tenantId, job.conversationId, keys, i === order.length - 1));
      }
      // Then each batch's writes, queued: they travel with the COMMIT (a read an append must repeat, sent at once,
      // runs under its batch's tenant too).
      const done = new Map<Job, Outcome>();
      for (const [i, job] of order.entries()) {
        await scope(job.tenantId);
        try {
          const appended = await appendInTransaction(
            tx,
            job.tenantId,
            job.conversationId,
            job.items,
            job.options,
            reads[i],
          );
          done.set(job, { appended });
        } catch (error) {
          if (!refusedBeforeWrites(error)) throw error;
          done.set(job, { refused: error });
        }
      }
      return done;
    },
    // Tried once: whatever fails it (a conflict too), each batch then runs alone, with its own retries.
    { ...APPEND_PLANS, maxAttempts: 1 },
  );
  for (const [job, outcome] of outcomes) {
    if ('refused' in outcome) job.reject(outcome.refused);
    else confirmAppend(job.conversationId, outcome.appended, job.options).then(job.resolve, job.reject);
  }
}

/** One batch in its own transaction, tried once, waiting at most `lockTimeoutMs` for a lock. */
export async function appendOnce(
  db: Kysely<Database>,
  job: Job,
  lockTimeoutMs = GROUP_LOCK_TIMEOUT_MS,
): Promise<AppendResult> {
  const appended = await withTenantWrite(
    db,
    job.tenantId,
    async (tx) => {
      await tx.executeQuery(lockTimeout(lockTimeoutMs));
      return appendInTransaction(tx, job.tenantId, job.conversationId, job.items, job.options);
    },
    { ...APPEND_PLANS, maxAttempts: 1 },
  );
  return confirmAppend(job.conversationId, appended, job.options);
}
