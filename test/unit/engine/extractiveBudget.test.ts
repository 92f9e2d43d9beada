import { describe, expect, it } from 'vitest';
import { fitBudget } from '../../../engine/extractive/budget.js';
import { emptySections, renderSections, type SummarySections } from '../../../engine/extractive/sections.js';
import { buildExtractiveSummaryBody, type ChatMessage, estimateTokensRough } from '../../../engine/index.js';

type Trimmed = 'critical' | 'done' | 'files' | 'user' | 'superseded' | 'blocked';
const ORDER: readonly Trimmed[] = ['critical', 'done', 'files', 'user', 'superseded', 'blocked'];

function sections(n: number): SummarySections {
  const s = emptySections();
  s.goal = ['Ship the kiosk redesign → v2 (キオスク)'];
  s.constraints = ['Never deploy on Fridays.', '必ずテストを実行してください。'];
  s.decisions = ['Use Postgres.'];
  s.nextSteps = ['Answer: why did build 7 fail?'];
  for (let i = 0; i < n; i++) {
    s.user.push(`User asked: can you fix src/m${i}.ts? 修正${i}`);
    s.done.push(`write_file → wrote ${100 + i} bytes to src/m${i}.ts`);
    s.files.push(`src/m${i}.ts (written by write_file)`);
    s.blocked.push(`bash: Error: TS${2300 + i} in src/m${i}.ts`);
    s.superseded.push(`Use Redis ${i}.`);
    s.critical.push(i % 3 === 0 ? `src/m${i}.ts` : `E${1000 + i}`);
  }
  return s;
}

/** The rule, one item at a time: drop in order until the rendered body's estimate fits (or nothing is left). */
function reference(full: SummarySections, budget: number): string {
  const s: SummarySections = structuredClone(full);
  for (const key of ORDER) {
    while (estimateTokensRough(renderSections(s)) > budget && s[key].length > 0) {
      if (key === 'critical') s[key].pop();
      else s[key].shift();
    }
  }
  return renderSections(s);
}

describe('fitBudget (issue #15 §2, SPEC §6.2 budget)', () => {
  it('drops the lowest-value items first, and no more than the budget needs', () => {
    const full = sections(25);
    const total = estimateTokensRough(renderSections(full));
    for (let budget = 40; budget <= total + 10; budget += 31) {
      const { critical, done, ...rest } = full;
      const sections = { ...structuredClone(rest), critical: [], done: [] };
      const deferred = fitBudget(sections, budget, { critical: () => [...critical], done: () => [...done] });
      expect(deferred).toBe(reference(full, budget));
      expect(fitBudget(structuredClone(full), budget, { critical: () => [...critical] })).toBe(deferred);
    }
  });

  it('keeps the body within the budget whenever something can still be dropped', () => {
    const full = sections(60);
    for (const budget of [200, 777, 1_500, 2_345]) {
      const body = fitBudget(structuredClone(full), budget, { critical: () => [...full.critical] });
      expect(estimateTokensRough(body)).toBeLessThanOrEqual(budget);
    }
  });

  it('lists a deferred section only when at least one of its items can be kept', () => {
    const full = sections(60);
    const calls = { done: 0, critical: 0 };
    const deferred = {
      done: () => {
        calls.done += 1;
        return [...full.done];
      },
      critical: () => {
        calls.critical += 1;
        return [...full.critical];
      },
    };
    const sized = (s: Partial<SummarySections>) => estimateTokensRough(renderSections({ ...full, ...s }));
    const withoutBoth = sized({ critical: [], done: [] });
    const withoutCritical = sized({ critical: [] });

    const none = fitBudget(structuredClone(full), withoutBoth - 1, deferred);
    expect(calls).toEqual({ done: 0, critical: 0 });
    expect(none).not.toContain('write_file →');
    expect(none).not.toContain('`');

    const someDone = fitBudget(structuredClone(full), withoutBoth + 30, deferred);
    expect(calls).toEqual({ done: 1, critical: 0 });
    expect(someDone).toContain(`- ${full.done.at(-1)}`);
    expect(someDone).not.toContain('`');

    const someCritical = fitBudget(structuredClone(full), withoutCritical + 30, deferred);
    expect(calls).toEqual({ done: 2, critical: 1 });
    expect(someCritical).toContain('- `src/m0.ts`');
  });
});

describe('buildExtractiveSummaryBody within the budget', () => {
  it('stays within the budget on a long window whose work reports are not ASCII', () => {
    const window: ChatMessage[] = [];
    for (let i = 0; window.length < 1_000; i++) {
      const file = `src/module${i % 37}/file${i % 11}.ts`;
      window.push({ role: 'user', content: `Please refactor ${file} so that it returns HTTP 4${i % 10}0. Why?` });
      window.push({
        role: 'assistant',
        content: `I ran \`npm test -- ${file}\` and updated ${file}.`,
        tool_calls: [
          { id: `c${i}`, type: 'function', function: { name: 'write_file', arguments: `{"path":"${file}"}` } },
        ],
      });
      window.push({ role: 'tool', tool_call_id: `c${i}`, content: `wrote ${120 + i} bytes` });
    }
    for (const budget of [3_000, 12_000]) {
      const body = buildExtractiveSummaryBody({ window, previousSummary: null, budgetTokens: budget });
      expect(estimateTokensRough(body)).toBeLessThanOrEqual(budget);
      expect(estimateTokensRough(body)).toBeGreaterThan(budget - 50);
    }
  });
});
