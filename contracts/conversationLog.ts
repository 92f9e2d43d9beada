// The content-free notification of a committed batch (DESIGN.md §3: PostgreSQL is the conversation log, the
// workflow decides; Temporal history holds decisions and ids, never message content). The gateway builds it from
// the append's result, inside nothing but ids, counts, token estimates and the provider's usage numbers.

import type { NativeCovered } from '../engine/nativeCompaction.js';
import type { QuietFold, QuietRules } from '../engine/quietBatches.js';
import type { TurnUsage, Usage } from '../engine/types.js';

export type { QuietFold, QuietRules };

/**
 * What comes with every notification to the conversation workflow (a loud batch, a manual compaction, a model
 * switch): the notification epoch it opened and the quiet batches committed since the previous one, which the
 * workflow applies first (engine/quietBatches.ts).
 */
export interface NotificationFold {
  epoch: number;
  quiet: QuietFold | null;
}

export interface StoredBatch {
  /** The conversation's batch sequence number of this batch; null when every item was a duplicate. */
  seq: number | null;
  /** The conversation's `batch_seq` when the batch was committed (every batch up to it exists). */
  latestSeq: number;
  /** The conversation's version after the batch, and its live totals at that version. */
  version: number;
  activeMessages: number;
  activeTokens: number;
  sessionId: string;
  /** Freshly stored rows and their summed token estimate. */
  rows: number;
  tokens: number;
  /**
   * The user message(s) the batch ends with, awaiting the model's answer (SPEC §11 "incoming message"): gateway
   * hygiene compacts the history before them and the preflight check runs. Null when the batch ends otherwise (its
   * user messages, if any, were answered within it).
   */
  incoming: { rowId: number; rows: number; tokens: number } | null;
  /** Fresh real user messages in the batch (SPEC §1.3; new user input for the SPEC §19 fixed-point detector). */
  users: number;
  /** A fresh assistant message: evidence of a model call since the last automatic compaction (SPEC §7.6). */
  freshAssistant: boolean;
  /** The provider's usage of the response that produced the batch's last assistant message, when that is fresh. */
  usage?: Usage;
  /** Token estimates of that assistant message and what follows it: counted on top of the reading (SPEC §7.6). */
  usageTailTokens?: number;
  /**
   * The batch is the reply of a chat turn the gateway ran (issue #11 §2): the turn's usage with its cache economics,
   * counted by the workflow as its own turns are. Absent otherwise.
   */
  turn?: TurnUsage;
  /**
   * With `turn`: the conversation's version when the turn's context was read. A compaction committed after it makes
   * the reading measure the transcript before that compaction: neither its verdict nor a trigger (issue #9 §4).
   */
  readVersion?: number;
  /**
   * With `turn`: the reply came with a native checkpoint (SPEC §15.1). Its reading is then left out (`usage` is
   * absent): it measured the input before the server compacted it; the next real reading counts. Never quiet.
   */
  nativeCheckpoint?: boolean;
  /** With `nativeCheckpoint`, when the gateway knows it: what the checkpoint stands in for (SPEC §15.1). */
  nativeCovered?: NativeCovered;
  /**
   * The gateway runs a chat turn after this batch without waiting for the workflow (issue #11 §2): the workflow
   * runs the turn's preflight check on it as on a turn of its own. Absent otherwise.
   */
  turnFollows?: boolean;
  /** Absent in notifications sent before quiet batches existed. */
  notification?: NotificationFold;
}
