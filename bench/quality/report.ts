// The table of `npm run bench:quality`: per difficulty and compactor, the means over every case and drift cycle,
// with the goals printed beside the figures (issue #15 §1; no assertion — the bench reports).

export interface CycleRecord {
  difficulty: string;
  compactor: string;
  caseId: string;
  cycle: number;
  items: { kind: 'presence' | 'absence'; answer: number; artifact: number }[];
  contradictionRate: number;
  tokens: { transcript: number; kept: number; fixed: number };
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
    row.keptRatio.push(r.tokens.kept / Math.max(1, r.tokens.transcript));
    row.fixed.push(r.tokens.fixed);
  }
  return byDifficulty;
}

export const GOAL_COMPACTOR = 'ours-extractive-nohead';
export const GOALS = { presence: 0.9, facts: 0.95, tokens: 0.3, contradictions: 0 };

function verdict(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
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
    const goal = rows.get(GOAL_COMPACTOR);
    if (goal) {
      const p = mean(goal.presence);
      const f = mean(goal.facts);
      const t = mean(goal.keptRatio);
      const c = mean(goal.contradictions);
      out.push(
        `\nGoal (issue #15, ${labels.get(GOAL_COMPACTOR)}): presence ≥ ${GOALS.presence} → ${f3(p)} ${verdict(p >= GOALS.presence)}; ` +
          `facts ≥ ${GOALS.facts} → ${f3(f)} ${verdict(f >= GOALS.facts)}; tokens ≤ ${pct(GOALS.tokens)} → ${pct(t)} ` +
          `${verdict(t <= GOALS.tokens)}; contradictions ${GOALS.contradictions} → ${f3(c)} ${verdict(c === 0)}.`,
      );
    }
  }
  return out.join('\n');
}
