// The row plan of a compaction commit (SPEC §13.2 in place, §13.3 rotation), decided in memory from the rows the
// compaction read and the compressed transcript M. Pure: the store (infra/db/compactionCommit/) writes the plan.
import type { ChatMessage } from '../types.js';
import { matchCarriedRows } from './carryMatch.js';
import { canonicalJson, runtimeProperties, wireKey, wireShape } from './messageKeys.js';

/** A row the compaction read, as the plan needs it. */
export interface ReadRow {
  id: number;
  position: number;
  message: ChatMessage;
  /** An operator pinned it (SPEC §19 `rehydrate_pinned`): a copy of it is pinned too. */
  pinned?: boolean;
}

/** The compressed transcript and where its summary is. */
export interface CompactedTranscript {
  output: readonly ChatMessage[];
  /**
   * Index in `output` of the message that holds the summary (standalone or merged); null when the output carries no
   * summary (a plugin engine that archives without summarising, SPEC §10.3).
   */
  summaryIndex: number | null;
  /** The summary body; null exactly when `summaryIndex` is null. */
  summaryBody: string | null;
}

/** A carried row that moves, changes its runtime properties or now holds the summary: it is rewritten from `message`. */
export interface CarriedUpdate {
  id: number;
  position: number;
  message: ChatMessage;
  summaryBody?: string;
}

/** A message of M that no old row carries. */
export interface NewRow {
  message: ChatMessage;
  position: number;
  summaryBody?: string;
  /** The copy of a pinned row (rotation): the new row is pinned as well. */
  pinned?: true;
}

export interface InPlacePlan {
  updates: CarriedUpdate[];
  /** Old rows no output message carries: archived (inactive, compacted, still searchable). */
  archivedIds: number[];
  inserts: NewRow[];
  /** The carried row that holds the summary, when no new row does. */
  carriedSummaryRowId: number | null;
}

export interface RotationPlan {
  /** All of M, in the new session. */
  inserts: NewRow[];
  /** Old rows no output message carries (the others are carried over, by equality). */
  notCarriedIds: number[];
}

/** Throws a RangeError when `summaryIndex` does not point into `output`, or only one of index and body is null. */
export function checkSummaryIndex(t: CompactedTranscript): void {
  if (t.summaryIndex === null || t.summaryBody === null) {
    if (t.summaryIndex !== t.summaryBody) throw new RangeError('summaryIndex and summaryBody must both be null');
    return;
  }
  if (!Number.isInteger(t.summaryIndex) || t.summaryIndex < 0 || t.summaryIndex >= t.output.length) {
    throw new RangeError(`summaryIndex ${t.summaryIndex} is outside the output (${t.output.length} messages)`);
  }
}

/**
 * SPEC §13.2 step 1: `carriedBy[i]` = index of the old row carrying output message i, -1 when it is new. Only rows
 * shaped like some output message get a key (the summarised bulk of a window does not); the others get a unique
 * placeholder no key equals (keys are JSON arrays), which changes no match.
 */
export function carriedIndexes(rows: readonly ReadRow[], output: readonly ChatMessage[]): number[] {
  const shapes = new Set(output.map(wireShape));
  return matchCarriedRows(
    rows.map((row, r) => (shapes.has(wireShape(row.message)) ? wireKey(row.message) : `#${r}`)),
    output.map(wireKey),
  );
}

function summaryAt(t: CompactedTranscript, position: number): { summaryBody: string } | null {
  return position === t.summaryIndex && t.summaryBody !== null ? { summaryBody: t.summaryBody } : null;
}

function newRow(t: CompactedTranscript, message: ChatMessage, position: number): NewRow {
  return { message, position, ...summaryAt(t, position) };
}

/** SPEC §13.2 steps 2–4: carried rows keep their id (new position), the others are archived, new messages inserted. */
export function planInPlace(rows: readonly ReadRow[], t: CompactedTranscript): InPlacePlan {
  const carriedBy = carriedIndexes(rows, t.output);
  const plan: InPlacePlan = { updates: [], archivedIds: [], inserts: [], carriedSummaryRowId: null };
  const carried = new Set<number>();
  t.output.forEach((message, position) => {
    const summary = summaryAt(t, position);
    const isSummary = summary !== null;
    const r = carriedBy[position] ?? -1;
    const row = rows[r];
    if (!row) {
      plan.inserts.push(newRow(t, message, position));
      return;
    }
    carried.add(r);
    if (isSummary) plan.carriedSummaryRowId = row.id;
    // Wire fields are equal; other runtime properties follow the output so the transcript reads back as M.
    const propertiesChanged =
      canonicalJson(runtimeProperties(row.message)) !== canonicalJson(runtimeProperties(message));
    if (row.position !== position || propertiesChanged || isSummary) {
      plan.updates.push({ id: row.id, position, message, ...summary });
    }
  });
  rows.forEach((row, r) => {
    if (!carried.has(r)) plan.archivedIds.push(row.id);
  });
  return plan;
}

/** SPEC §13.3: the new session holds all of M; the old rows M does not carry are the compaction's compacted rows. */
export function planRotation(rows: readonly ReadRow[], t: CompactedTranscript): RotationPlan {
  const carriedBy = carriedIndexes(rows, t.output);
  const carried = new Set(carriedBy);
  return {
    // A carried row's copy keeps its pin (a pinned message stays pinned in the new session).
    inserts: t.output.map((message, position) => {
      const row = newRow(t, message, position);
      return rows[carriedBy[position] ?? -1]?.pinned ? { ...row, pinned: true as const } : row;
    }),
    notCarriedIds: rows.filter((_, r) => !carried.has(r)).map((row) => row.id),
  };
}
