// The table of `npm run bench:quality`: per difficulty and compactor, the means over every case and drift cycle,
// with the goals printed beside the figures and, for each goal not met, the figure of the same run that
// bounds it (issue #15 §1; no assertion — the bench reports).
import type { CycleTokens } from './compactors.js';

export interface CycleRecord {
  difficulty: string;
  compactor: string;
  caseId: string;
  cycle: number;
  items: { kind: 'presence' | 'absence'; answer: number; artifact: number }[];
  contradictionRate: number;
  tokens: CycleTokens;
}

interface Row {
  cases: Set<string>;
  cycles: number;
  presence: number[];
  facts: number[];
  absence: number[];
  contradictions: number[];
  keptRatio: number[];
  fixed: number[];
  tailRatio: number[];
  headingsRatio: number[];
  records: CycleRecord[];
}

const mean = (xs: readonly number[]): number =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
const f3 = (x: number): string => (Number.isNaN(x) ? '—' : x.toFixed(3));
const pct = (x: number): string => `${Math.round(x * 100)} %`;

export function aggregate(records: readonly CycleRecord[]): Map<string, Map<string, Row>> {
  const byDifficulty = new Map<string, Map<string, Row>>();
  for (const r of records) {
    const rows = byDifficulty.get(r.difficulty) ?? new Map<string, Row>();
    byDifficulty.set(r.difficulty, rows);
    const row = rows.get(r.compactor) ?? {
      cases: new Set(),
      cycles: 0,
      presence: [],
      facts: [],
      absence: [],
      contradictions: [],
      keptRatio: [],
      fixed: [],
      tailRatio: [],
      headingsRatio: [],
      records: [],
    };
    rows.set(r.compactor, row);
    row.cases.add(r.caseId);
    row.cycles++;
    for (const item of r.items) {
      if (item.kind === 'presence') {
        row.presence.push(item.answer);
        row.facts.push(item.artifact);
      } else {
        row.absence.push(item.answer);
      }
    }
    row.contradictions.push(r.contradictionRate);
    const transcript = Math.max(1, r.tokens.transcript);
    row.keptRatio.push(r.tokens.kept / transcript);
    row.fixed.push(r.tokens.fixed);
    row.tailRatio.push(r.tokens.tail / transcript);
    row.headingsRatio.push(r.tokens.headings / transcript);
    row.records.push(r);
  }
  return byDifficulty;
}

export const GOAL_COMPACTOR = 'ours-extractive-nohead';
export const GOALS = { presence: 0.9, facts: 0.95, tokens: 0.3, contradictions: 0 };

function verdict(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
}

export const BASELINE = 'keep-everything';

const cycleKey = (r: CycleRecord): string => `${r.caseId}#${r.cycle}`;

/** Presence checks one row passes and the other fails (same case, cycle and item). */
function presenceDifference(row: Row, other: Row): { only: number; missed: number } {
  const byCycle = new Map(other.records.map((r) => [cycleKey(r), r]));
  let only = 0;
  let missed = 0;
  for (const r of row.records) {
    const o = byCycle.get(cycleKey(r));
    if (!o) continue;
    r.items.forEach((item, i) => {
      const theirs = o.items[i];
      if (item.kind !== 'presence' || !theirs) return;
      if (item.answer > theirs.answer) only++;
      if (item.answer < theirs.answer) missed++;
    });
  }
  return { only, missed };
}

/** The case templates whose cycles have a contradiction: "template n/m" (cycles with one / cycles). */
function contradictingTemplates(row: Row): string {
  const counts = new Map<string, { hit: number; all: number }>();
  for (const r of row.records) {
    const template = r.caseId.split(':')[0] as string;
    const c = counts.get(template) ?? { hit: 0, all: 0 };
    counts.set(template, c);
    c.all++;
    if (r.contradictionRate > 0) c.hit++;
  }
  return [...counts]
    .filter(([, c]) => c.hit > 0)
    .map(([t, c]) => `${t} ${c.hit}/${c.all}`)
    .join(', ');
}

/** The goal lines of one difficulty: each goal, its figure, and for each one not met what bounds it. */
function goalLines(rows: ReadonlyMap<string, Row>, labels: ReadonlyMap<string, string>): string[] {
  const goal = rows.get(GOAL_COMPACTOR);
  if (!goal) return [];
  const base = rows.get(BASELINE);
  const p = mean(goal.presence);
  const f = mean(goal.facts);
  const t = mean(goal.keptRatio);
  const c = mean(goal.contradictions);
  const out = [`\nGoals (issue #15, ${labels.get(GOAL_COMPACTOR)}), and what bounds each one not met:`];
  let line = `- presence ≥ ${GOALS.presence} → ${f3(p)} ${verdict(p >= GOALS.presence)}`;
  if (p < GOALS.presence && base) {
    const d = presenceDifference(goal, base);
    line +=
      `. Bound: keep everything scores ${f3(mean(base.presence))} with the same answerer (its ceiling: it quotes ` +
      `one line, never combines or negates); ours fails ${d.missed} check(s) keep everything passes and passes ` +
      `${d.only} it fails.`;
  }
  out.push(line);
  line = `- facts in the artifact ≥ ${GOALS.facts} → ${f3(f)} ${verdict(f >= GOALS.facts)}`;
  if (f < GOALS.facts && base) line += `. Keep everything: ${f3(mean(base.facts))}.`;
  out.push(line);
  line = `- tokens kept ≤ ${pct(GOALS.tokens)} → ${pct(t)} ${verdict(t <= GOALS.tokens)}`;
  if (t > GOALS.tokens) {
    const tail = mean(goal.tailRatio);
    const headings = mean(goal.headingsRatio);
    line +=
      `. Bound: the last 4 messages, kept verbatim, are ${pct(tail)} of the transcript and the §8.5.5 headings ` +
      `${pct(headings)}: ${pct(tail + headings)} before any summary item; ours without the tail keeps ` +
      `${pct(t - tail)}, its items ${pct(t - tail - headings)}.`;
  }
  out.push(line);
  line = `- contradictions ${GOALS.contradictions} → ${f3(c)} ${verdict(c === 0)}`;
  if (c > 0) {
    line += `. Cycles with one: ${contradictingTemplates(goal)}`;
    if (base) line += `; keep everything: ${f3(mean(base.contradictions))} with the same answerer`;
    line += '.';
  }
  out.push(line);
  return out;
}

export function renderTable(records: readonly CycleRecord[], labels: ReadonlyMap<string, string>): string {
  const out: string[] = [];
  for (const [difficulty, rows] of aggregate(records)) {
    const first = rows.values().next().value as Row | undefined;
    const cycles = first ? Math.round(first.cycles / Math.max(1, first.cases.size)) : 0;
    out.push(`\n### difficulty \`${difficulty}\`: ${first?.cases.size ?? 0} cases × ${cycles} cycles`);
    out.push(
      '| compactor | presence checks | fact still in the artifact | absence checks | contradiction rate | tokens kept | + fixed lines (tokens) |',
    );
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const [key, row] of rows) {
      out.push(
        `| ${labels.get(key) ?? key} | ${f3(mean(row.presence))} | ${f3(mean(row.facts))} | ${f3(mean(row.absence))} | ` +
          `${f3(mean(row.contradictions))} | ${pct(mean(row.keptRatio))} | ${Math.round(mean(row.fixed))} |`,
      );
    }
    out.push(...goalLines(rows, labels));
  }
  return out.join('\n');
}
