// Fitting the extractive summary into the summary budget of SPEC §6.2 (issue #15 §2). The lowest-value items go
// first: identifiers ranked last, then the oldest work reports, files, user statements, superseded decisions and
// blockers. Items are dropped until the estimate (SPEC §3.1) of the body as rendered is within the budget. The
// body's size is kept in parts (bytes, one-token characters) and updated per dropped line, so the body is rendered
// once; the identifiers and the work done are built only when at least one of their items can be kept.
import { addRoughSize, type RoughSize, roughTokensOfSize } from '../tokens.js';
import { HEADING_LINES, itemFrameBytes, renderSections, type SummarySections } from './sections.js';

type Trimmed = 'critical' | 'done' | 'files' | 'user' | 'superseded' | 'blocked';

/** Lowest value first. Identifiers are ranked (dropped from the end); the other lists are chronological (oldest first). */
const TRIM_ORDER: readonly Trimmed[] = ['critical', 'done', 'files', 'user', 'superseded', 'blocked'];

type Key = keyof SummarySections;

/** Adds (or takes away) the line of one item of `key` and its line break. */
function addLine(size: RoughSize, key: Key, item: string, sign: 1 | -1): void {
  addRoughSize(size, item, sign);
  size.bytes += sign * (itemFrameBytes(key) + 1);
}

function addItems(size: RoughSize, key: Key, items: readonly string[]): void {
  for (const item of items) addLine(size, key, item, 1);
}

/** Sections listed only when the budget can keep some of their items: the lowest-value ones, in TRIM_ORDER. */
export type DeferredSections = { critical: () => string[]; done?: () => string[] };

/**
 * The body of `sections` with as few items dropped as keep its estimate within `budgetTokens`. The sections in
 * `deferred` (their lists in `sections` ignored) are listed only when at least one of their items fits: with the
 * more valuable sections alone over the budget, every item of theirs would be dropped. What cannot be dropped
 * (goal, constraints, current decisions, next steps) stays even when it alone is over the budget.
 */
export function fitBudget(sections: SummarySections, budgetTokens: number, deferred: DeferredSections): string {
  // The headings and the line breaks between them: every line after the first adds one.
  const size: RoughSize = { bytes: -1, cjk: 0 };
  for (const heading of HEADING_LINES) {
    addRoughSize(size, heading);
    size.bytes += 1;
  }
  const later: Partial<Record<Key, () => string[]>> = deferred;
  for (const key of Object.keys(sections) as Key[]) if (!later[key]) addItems(size, key, sections[key]);
  const fits = () => roughTokensOfSize(size) <= budgetTokens;
  const out: SummarySections = { ...sections };
  // Most valuable first: a deferred section is listed when the body without it and those below it fits.
  let room = true;
  for (const key of [...TRIM_ORDER].reverse()) {
    const list = later[key];
    if (!list) continue;
    room &&= fits();
    out[key] = room ? list() : [];
    addItems(size, key, out[key]);
  }
  for (const key of TRIM_ORDER) {
    if (fits()) break;
    const list = out[key];
    let dropped = 0;
    while (!fits() && dropped < list.length) {
      addLine(size, key, list[key === 'critical' ? list.length - 1 - dropped : dropped] as string, -1);
      dropped += 1;
    }
    out[key] = key === 'critical' ? list.slice(0, list.length - dropped) : list.slice(dropped);
  }
  return renderSections(out);
}
