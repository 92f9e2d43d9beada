// OpenAI Responses native compaction around one turn (issue #13 §1, SPEC §15.1), for the turn runner (turnRunner.ts)
// wherever it runs: the worker's respond activity or the gateway's own turn.
//
// Before the call: the transcript's replay data and the session's flag are read (one read-only transaction, only for
// a Responses provider). The newest reply with a checkpoint this route issued (provider, base URL, account) is
// where the request starts — the system prompt, its `compaction` items, then every row after the last one its
// request carried (the reply, a message stored while the model answered, what followed); items of another route
// are never sent. The gate decides whether the request carries `context_management`.
// After it: a rejection turns the feature off for the session (stored on its row); the reply's `compaction` items
// become its replay data, stored with its turn record, with what they stand in for.
import type { Kysely } from 'kysely';
import {
  type NativeCovered,
  type NativeReplay,
  nativeCheckpointIndex,
  nativeCompactionGate,
  type ReplayOrigin,
  rowsAfterCheckpoint,
} from '../engine/nativeCompaction.js';
import type { StoredMessage } from '../infra/db/messages.js';
import type { Database } from '../infra/db/schema.js';
import { disableResponsesNative } from '../infra/db/sessions.js';
import { READ_ONLY, withTenant } from '../infra/db/tenant.js';
import { selectReplays } from '../infra/db/turns.js';
import type { ProviderClient } from '../infra/llm/clients.js';
import type { ChatResult } from '../infra/llm/types.js';

/** What the request of a turn sends, as far as native compaction shapes it. */
export interface NativeRequest {
  /** The rows to prepare and send after the leading items. */
  rows: readonly StoredMessage[];
  leadingItems?: Array<Record<string, unknown>>;
  compactThreshold?: number;
  /** Where the reply's replay items come from, and the session a rejection is stored on. */
  origin: ReplayOrigin;
  sessionId: string;
}

export interface NativeTurn {
  tenantId: string;
  sessionId: string;
  model: string;
  /** The conversation's published `compact_threshold` (SPEC §15.1), null or absent when not opted in. */
  nativeCompactThreshold?: number | null;
}

/** The request of a turn to a Responses provider; null for any other provider (nothing to read, nothing to add). */
export async function nativeRequest(
  db: Kysely<Database>,
  turn: NativeTurn,
  client: ProviderClient,
  rows: readonly StoredMessage[],
): Promise<NativeRequest | null> {
  if (client.kind !== 'openai' || client.api !== 'responses') return null;
  const sessionId = rows.at(-1)?.sessionId ?? turn.sessionId;
  const replyIds = rows.filter((r) => r.message.role === 'assistant').map((r) => r.id);
  const { replays, disabled } = await withTenant(
    db,
    turn.tenantId,
    async (tx) => {
      const [replays, session] = await Promise.all([
        selectReplays(tx, turn.tenantId, replyIds),
        tx
          .selectFrom('sessions')
          .select('responses_native_disabled')
          .where('tenant_id', '=', turn.tenantId)
          .where('id', '=', sessionId)
          .executeTakeFirst(),
      ]);
      return { replays, disabled: session?.responses_native_disabled === true };
    },
    READ_ONLY,
  );
  const origin: ReplayOrigin = { provider: client.id, baseUrl: client.baseUrl, account: client.account };
  const threshold = turn.nativeCompactThreshold ?? null;
  const gate = nativeCompactionGate(
    { codexResponsesNative: threshold !== null },
    { api: 'responses', model: turn.model, provider: client.id, baseUrl: client.baseUrl, disabledForSession: disabled },
  );
  const at = nativeCheckpointIndex(
    rows.map((r) => replays.get(r.id)),
    origin,
  );
  const checkpoint = at === null ? undefined : rows[at];
  const replay = checkpoint ? replays.get(checkpoint.id) : undefined;
  // The items stand in for the rows up to the last one their request carried; system rows are always sent.
  const through = replay?.throughPosition ?? (checkpoint ? checkpoint.position - 1 : null);
  return {
    rows: rowsAfterCheckpoint(
      rows.map((row) => ({ row, position: row.position, role: row.message.role })),
      through,
    ).map((r) => r.row),
    ...(replay ? { leadingItems: replay.items } : {}),
    ...(gate.send && threshold !== null ? { compactThreshold: threshold } : {}),
    origin,
    sessionId,
  };
}

/**
 * After the call: a refused field is turned off for the session; the reply's checkpoint, if any, to store — with
 * what it stands in for among `transcript` (the rows the turn read): the non-system rows up to the last one sent.
 */
export async function afterNativeCall(
  db: Kysely<Database>,
  tenantId: string,
  request: NativeRequest | null,
  result: ChatResult,
  transcript: readonly StoredMessage[],
): Promise<{ replay: NativeReplay; covered: NativeCovered } | null> {
  if (!request) return null;
  if (result.nativeRejected) await disableResponsesNative(db, tenantId, request.sessionId);
  const items = result.compactionItems ?? [];
  if (items.length === 0) return null;
  const through = request.rows.at(-1)?.position ?? -1;
  const covered = { tokens: 0, messages: 0 };
  for (const row of transcript) {
    if (row.position > through || row.message.role === 'system') continue;
    covered.tokens += row.tokenEstimate;
    covered.messages += 1;
  }
  return { replay: { origin: request.origin, items, throughPosition: through }, covered };
}
