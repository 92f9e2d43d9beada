// The helpers that let compress() stop estimating early (budget ceiling, hygiene comparison) and scan a window
// range without copying it: each must agree with the full computation it replaces.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeSummaryBudget, summaryBudgetSaturated } from '../../../engine/budgets.js';
import type { ChatMessage } from '../../../engine/index.js';
import { summaryText } from '../../../engine/messages.js';
import { budgetContentTokens, estimateRowTokens, outputTokens } from '../../../engine/phases.js';
import { windowHasTurns } from '../../../engine/summaryPrompt.js';
import { estimateMessagesTokensRough, messagesTokensExceed } from '../../../engine/tokens.js';
import { asst, call, chars, tool, user } from './builders.js';

const row = fc.oneof(
  fc.string({ maxLength: 400 }).map((s) => user(s)),
  fc.string({ maxLength: 400 }).map((s) => asst(s)),
  fc.nat({ max: 5000 }).map((n) => tool('c1', chars(n))),
  fc.constant(asst(null, [call('c1')])),
  fc.constant(asst(summaryText('## Goal\nold'))),
);
const rows = fc.array(row, { maxLength: 40 });

describe('summaryBudgetSaturated', () => {
  it('is true exactly when more content no longer changes computeSummaryBudget', () => {
    fc.assert(
      fc.property(fc.nat({ max: 200_000 }), fc.integer({ min: -10, max: 2_000_000 }), (content, ctx) => {
        if (!summaryBudgetSaturated(content, ctx)) return;
        const budget = computeSummaryBudget(content, ctx);
        for (const more of [1, 17, 1_000, 1_000_000]) expect(computeSummaryBudget(content + more, ctx)).toBe(budget);
      }),
    );
  });

  it('is false below the ceiling and never true for a non-finite context length', () => {
    expect(summaryBudgetSaturated(59_999, 1_000_000)).toBe(false);
    expect(summaryBudgetSaturated(60_000, 1_000_000)).toBe(true);
    expect(summaryBudgetSaturated(1e12, Number.NaN)).toBe(false);
  });
});

describe('budgetContentTokens', () => {
  it('gives the same summary budget as the full window estimate', () => {
    fc.assert(
      fc.property(rows, fc.integer({ min: 1_000, max: 400_000 }), (window, ctx) => {
        const full = estimateMessagesTokensRough(window);
        const partial = budgetContentTokens(window, ctx);
        expect(partial).toBeLessThanOrEqual(full);
        expect(computeSummaryBudget(partial, ctx)).toBe(computeSummaryBudget(full, ctx));
      }),
    );
  });

  it('sums the whole window below the ceiling and stops once it is reached', () => {
    const window = [user(chars(4_000)), user(chars(4_000)), user(chars(4_000))];
    expect(budgetContentTokens(window, 1_000_000)).toBe(estimateMessagesTokensRough(window));
    expect(budgetContentTokens(window, 2_000)).toBe(estimateMessagesTokensRough(window.slice(0, 1)));
  });
});

describe('messagesTokensExceed', () => {
  it('agrees with the full estimate', () => {
    fc.assert(
      fc.property(rows, fc.integer({ min: -5, max: 5_000 }), (messages, limit) => {
        expect(messagesTokensExceed(messages, limit)).toBe(estimateMessagesTokensRough(messages) > limit);
      }),
    );
  });
});

describe('windowHasTurns over a range', () => {
  it('agrees with windowHasTurns of the slice', () => {
    fc.assert(
      fc.property(rows, fc.nat({ max: 45 }), fc.nat({ max: 45 }), (messages, a, b) => {
        const [from, to] = a <= b ? [a, b] : [b, a];
        const slice: ChatMessage[] = messages.slice(from, to);
        expect(windowHasTurns(messages, '## Goal\nold', from, to)).toBe(windowHasTurns(slice, '## Goal\nold'));
        expect(windowHasTurns(messages, null, from, to)).toBe(windowHasTurns(slice, null));
      }),
    );
  });
});

describe('outputTokens', () => {
  it('equals the estimate of the output, whichever rows are taken over from the input', () => {
    fc.assert(
      fc.property(rows, rows, fc.nat({ max: 45 }), fc.nat({ max: 45 }), (input, fresh, a, b) => {
        const [headEnd, cut] = a <= b ? [a, b] : [b, a];
        const output = [...input.slice(0, headEnd), ...fresh, ...input.slice(cut)];
        const rowTokens = estimateRowTokens(input);
        expect(outputTokens(output, input, rowTokens, { headEnd, cut })).toBe(estimateMessagesTokensRough(output));
      }),
    );
  });
});
