// Processing lag: for every accepted batch, the time from its 2xx until the conversation workflow's applied position
// (`conversations.applied_seq`, which the workflow writes when it has taken every decision due for the batches up to
// it) covers it. Method: a poller reads applied_seq of the conversations with batches not applied yet in one query
// every `intervalMs` (or, without SQL access, their GET …/status). When a poll sees applied_seq
// pass batch k, the batch was applied after the last poll that did not (or after its accept, if later) and before
// this one; the lag is taken at the middle of that interval (error ± half the interval plus the query's own time).
// Batch k of a conversation is its k-th accepted batch: one request is in flight per conversation (ingest.ts).
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { JsonHttp } from './http.js';
import type { BenchConversation } from './setup.js';
import { sleep } from './stats.js';

interface Track {
  conversation: BenchConversation;
  /** Accept time of batch seq = index + 1. */
  acceptedAt: number[];
  /** A batch of unknown fate was posted: later batches' positions are unknown. */
  uncertain: boolean;
  applied: number;
  /** Batches the log holds (as the last poll saw it). */
  batchSeq: number;
  observedAt: number;
}

export class AppliedTracker {
  readonly lags: number[] = [];
  private readonly tracks = new Map<string, Track>();

  constructor(conversations: readonly BenchConversation[]) {
    const now = performance.now();
    for (const conversation of conversations) {
      this.tracks.set(conversation.id, {
        conversation,
        acceptedAt: [],
        uncertain: false,
        applied: 0,
        batchSeq: 0,
        observedAt: now,
      });
    }
  }

  accepted(conversation: BenchConversation, at: number, stored: number): void {
    const track = this.tracks.get(conversation.id);
    if (track && !track.uncertain && stored > 0) track.acceptedAt.push(at);
  }

  failed(conversation: BenchConversation): void {
    const track = this.tracks.get(conversation.id);
    if (track) track.uncertain = true;
  }

  /** A poll's reading of one conversation at `at` (performance.now()). */
  observe(conversationId: string, appliedSeq: number, batchSeq: number, at: number): void {
    const track = this.tracks.get(conversationId);
    if (!track) return;
    const upTo = Math.min(appliedSeq, track.acceptedAt.length);
    for (let seq = track.applied + 1; seq <= upTo; seq++) {
      const accept = track.acceptedAt[seq - 1]!;
      const from = Math.max(track.observedAt, accept);
      this.lags.push(Math.max(0, (from + at) / 2 - accept));
    }
    track.applied = Math.max(track.applied, appliedSeq);
    track.batchSeq = Math.max(track.batchSeq, batchSeq);
    track.observedAt = at;
  }

  /** Conversations whose applied position is behind what was accepted (or what the log holds). */
  pending(): BenchConversation[] {
    const behind: BenchConversation[] = [];
    for (const track of this.tracks.values()) {
      if (track.applied < Math.max(track.batchSeq, track.acceptedAt.length)) behind.push(track.conversation);
    }
    return behind;
  }

  /** Accepted batches (certain ones) not applied yet. */
  unappliedBatches(): number {
    let sum = 0;
    for (const track of this.tracks.values()) sum += Math.max(0, track.acceptedAt.length - track.applied);
    return sum;
  }

  uncertainConversations(): number {
    return [...this.tracks.values()].filter((t) => t.uncertain).length;
  }
}

export interface Poller {
  /** Polls so far and their mean query time (ms). */
  polls(): { count: number; meanMs: number };
  stop(): Promise<void>;
}

/** Runs `round` every `intervalMs` until stopped; `round` reports each reading's own time (ms) to `timed`. */
function pollEvery(intervalMs: number, round: (timed: (ms: number) => void, running: () => boolean) => Promise<void>) {
  let running = true;
  let count = 0;
  let totalMs = 0;
  const timed = (ms: number) => {
    count += 1;
    totalMs += ms;
  };
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await round(timed, () => running).catch(() => undefined); // a failed round is skipped; the next catches up
      await sleep(Math.max(0, intervalMs - (performance.now() - started)));
    }
  })();
  return {
    polls: () => ({ count, meanMs: count > 0 ? totalMs / count : Number.NaN }),
    stop: async () => {
      running = false;
      await loop;
    },
  } satisfies Poller;
}

/**
 * Reads applied_seq of the conversations still behind every `intervalMs` (one query by primary key, the owner's
 * pool). Only those: a conversation with nothing accepted since its last reading has no lag to measure, and reading
 * all 10,000 of them every 100 ms cost the load generator 13–19 ms a poll, on the cores the product runs on.
 */
export function pollApplied(db: pg.Pool, tracker: AppliedTracker, intervalMs: number) {
  return pollEvery(intervalMs, async (timed) => {
    const behind = tracker.pending();
    if (behind.length === 0) return;
    const sent = performance.now();
    const { rows } = await db.query<{ id: string; applied_seq: string; batch_seq: string }>(
      `SELECT c.id, c.applied_seq, c.batch_seq
         FROM unnest($1::text[], $2::text[]) AS k(tenant_id, id)
         JOIN conversations c ON c.tenant_id = k.tenant_id AND c.id = k.id`,
      [behind.map((c) => c.tenant.id), behind.map((c) => c.id)],
    );
    const received = performance.now();
    for (const row of rows) {
      tracker.observe(row.id, Number(row.applied_seq), Number(row.batch_seq), (sent + received) / 2);
    }
    timed(received - sent);
  });
}

/** Without SQL: GET …/status of the conversations still behind, `concurrency` at a time. */
export function pollAppliedOverHttp(http: JsonHttp, tracker: AppliedTracker, concurrency: number, intervalMs: number) {
  return pollEvery(intervalMs, async (timed, running) => {
    const behind = tracker.pending();
    let next = 0;
    const caller = async () => {
      while (running() && next < behind.length) {
        const conversation = behind[next++]!;
        const answer = await http.request('GET', `/v1/conversations/${conversation.id}/status`, {
          token: conversation.tenant.key,
          timeoutMs: 10_000,
        });
        if (answer.status !== 200) continue;
        timed(answer.ms);
        const at = answer.startedAt + answer.ms / 2;
        tracker.observe(conversation.id, Number(answer.body.appliedSeq), Number(answer.body.batchSeq), at);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, caller));
  });
}

/** Waits until every conversation has applied everything, at most `timeoutMs`; the seconds it took, or null. */
export async function drain(tracker: AppliedTracker, timeoutMs: number): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    if (tracker.pending().length === 0) return (performance.now() - started) / 1000;
    await sleep(20);
  }
  return null;
}
