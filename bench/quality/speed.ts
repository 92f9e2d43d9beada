// Speed of the extractive summariser (issue #15 §2: ≤ 5 ms for a 1,000-message window), beside the §9.5 fallback
// summary on the same window measured in the same run (the ratio is the figure to compare between machines).
import { performance } from 'node:perf_hooks';
import { buildExtractiveSummaryBody, buildFallbackSummaryBody, type ChatMessage } from '../../engine/index.js';

export const SPEED_GOAL_MS = 5;

/** A deterministic coding-agent window: requests, constraints, tool calls on files, results and errors. */
export function syntheticWindow(size: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; out.length < size; i++) {
    const file = `src/module${i % 37}/file${i % 11}.ts`;
    out.push({
      role: 'user',
      content:
        i % 9 === 0
          ? `Never touch ${file} without running the tests first. We must keep latency under ${100 + i} ms.`
          : `Please refactor ${file} so that the handler returns HTTP 4${i % 10}0 on bad input. Why did build ${i} fail?`,
    });
    out.push({
      role: 'assistant',
      content: `I ran \`npm test -- ${file}\` and updated ${file}.`,
      tool_calls: [
        { id: `c${i}`, type: 'function', function: { name: 'write_file', arguments: `{"path":"${file}"}` } },
      ],
    });
    out.push({
      role: 'tool',
      tool_call_id: `c${i}`,
      content: i % 5 === 0 ? `Error: TS2322 in ${file}:${i}\n    at check (${file}:${i})` : `wrote ${120 + i} bytes`,
    });
  }
  return out.slice(0, size);
}

function medianMs(run: () => void, repeat: number): number {
  const times: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    run();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** The §6.2 summary budget's ceiling: what a 1,000-message window gets (its body is trimmed to fit). */
const BUDGET_TOKENS = 12_000;

export function benchSpeed(size = 1_000, repeat = 31): string {
  const window = syntheticWindow(size);
  const extractive = () => buildExtractiveSummaryBody({ window, previousSummary: null, budgetTokens: BUDGET_TOKENS });
  // The same window with a budget that keeps every section: every identifier is ranked (the trimmed run skips that
  // when none of them fits, engine/extractive/budget.ts).
  const untrimmed = () =>
    buildExtractiveSummaryBody({ window, previousSummary: null, budgetTokens: Number.MAX_SAFE_INTEGER });
  const fallback = () => buildFallbackSummaryBody({ window, previousSummary: null, failureClass: 'error' });
  for (let i = 0; i < 5; i++) {
    extractive();
    untrimmed();
    fallback();
  }
  const e = medianMs(extractive, repeat);
  const u = medianMs(untrimmed, repeat);
  const f = medianMs(fallback, repeat);
  return (
    `\n### extractive summariser speed (${size}-message window, median of ${repeat})\n` +
    `| summariser | median ms | goal |\n|---|---:|---|\n` +
    `| extractive, budget ${BUDGET_TOKENS.toLocaleString('en-US')} tokens (§6.2 ceiling) | ${e.toFixed(2)} | ` +
    `≤ ${SPEED_GOAL_MS} ms: ${e <= SPEED_GOAL_MS ? 'met' : 'NOT met'} |\n` +
    `| extractive, every section kept (no budget) | ${u.toFixed(2)} | — |\n` +
    `| §9.5 fallback (baseline, same run) | ${f.toFixed(2)} | — |\n` +
    `Ratio extractive / fallback: ${(e / f).toFixed(1)}× (every section kept: ${(u / f).toFixed(1)}×)`
  );
}
