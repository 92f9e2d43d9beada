// The quality gate of LLM summaries, its pure part (issue #15 §3): what must be kept, the share kept, the re-prompt
// block and the deterministic append under "Critical Context".
import { describe, expect, it } from 'vitest';
import {
  appendToCriticalContext,
  type ChatMessage,
  gateItems,
  gateRepromptBlock,
  missingGateItems,
  retentionShare,
  SUMMARY_PREFIX,
  withArchivePointer,
} from '../../../engine/index.js';

const window: ChatMessage[] = [
  {
    role: 'user',
    content: 'Deploy the billing service to staging. Never touch the prod-eu cluster. Always run `make check` first.',
  },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"services/billing.yaml"}' } },
    ],
  },
  // Identifiers of tool output and assistant prose are not pinned (the extractive summary keeps those).
  { role: 'tool', tool_call_id: 'c1', content: 'replicas: 3\nimage: billing:4f9a2c1d' },
  { role: 'assistant', content: 'Read services/billing.yaml; see docs/ops/notes.md for more.' },
  { role: 'user', content: '絶対に本番で直接変更しないでください。' },
];

describe('gateItems', () => {
  it("pins the user's identifiers and the tool calls' paths, and the user's constraints in order", () => {
    expect(gateItems(window, null)).toEqual({
      identifiers: ['make check', 'services/billing.yaml'],
      constraints: [
        'Never touch the prod-eu cluster.',
        'Always run `make check` first.',
        '絶対に本番で直接変更しないでください。',
      ],
    });
  });

  it('reads a merged summary by its own text only (the previous summary is not re-pinned)', () => {
    const previous = '## Goal\nOld goal with `old/path.ts`; never use tabs.';
    const merged: ChatMessage[] = [
      { role: 'user', content: `${SUMMARY_PREFIX}\n${previous}` },
      { role: 'user', content: 'Now fix `src/new.ts`.' },
    ];
    expect(gateItems(merged, previous)).toEqual({ identifiers: ['src/new.ts'], constraints: [] });
  });
});

describe('missingGateItems and retentionShare', () => {
  const items = gateItems(window, null);

  it('a summary keeping every item passes; a paraphrased constraint counts, a dropped identifier does not', () => {
    const full =
      '## Goal\nDeploy billing to staging.\n## Constraints & Preferences\n- The user said never to touch the ' +
      'prod-eu cluster; always run `make check` first.\n- 絶対に本番で直接変更しないでください。\n## Relevant Files\n' +
      '- services/billing.yaml';
    expect(missingGateItems(full, items)).toEqual({ identifiers: [], constraints: [] });
    expect(retentionShare(full, items)).toBe(1);
    const partial = '## Goal\nDeploy billing to staging.\n## Relevant Files\n- services/billing.yaml';
    expect(missingGateItems(partial, items)).toEqual({
      identifiers: ['make check'],
      constraints: items.constraints,
    });
    expect(retentionShare(partial, items)).toBeCloseTo(1 / 5);
  });

  it('the archive pointer does not count as keeping anything; nothing to keep is a share of 1', () => {
    const pointerOnly = withArchivePointer('## Goal\nx', 'services/billing.yaml');
    expect(retentionShare(pointerOnly, items)).toBe(0);
    expect(retentionShare('## Goal\nx', { identifiers: [], constraints: [] })).toBe(1);
  });
});

describe('gateRepromptBlock and appendToCriticalContext', () => {
  const missing = { identifiers: ['make check', 'services/billing.yaml'], constraints: ['Never touch prod-eu.'] };

  it('the re-prompt names every missing item and carries the draft', () => {
    const block = gateRepromptBlock('## Goal\ndraft', missing);
    expect(block).toContain('MISSING ITEMS:\n- User constraint: Never touch prod-eu.\n- `make check`');
    expect(block).toContain('- `services/billing.yaml`');
    expect(block.endsWith('YOUR SUMMARY:\n## Goal\ndraft')).toBe(true);
  });

  it('appends at the end of an existing Critical Context section, replacing a "(none)" filler', () => {
    const body = '## Goal\ng\n## Critical Context\n- (none)\n\n## Extra\nx';
    expect(appendToCriticalContext(body, missing)).toBe(
      '## Goal\ng\n## Critical Context\n- User constraint: Never touch prod-eu.\n- `make check`\n' +
        '- `services/billing.yaml`\n## Extra\nx',
    );
    const kept = '## Goal\ng\n## Critical Context\n- port 8080';
    expect(appendToCriticalContext(kept, missing)).toBe(
      `${kept}\n- User constraint: Never touch prod-eu.\n- \`make check\`\n- \`services/billing.yaml\``,
    );
  });

  it('adds the section when the body has none, and appended items are then kept', () => {
    const body = '## Goal\ng';
    const appended = appendToCriticalContext(body, missing);
    expect(appended.startsWith('## Goal\ng\n## Critical Context\n')).toBe(true);
    expect(missingGateItems(appended, missing)).toEqual({ identifiers: [], constraints: [] });
    expect(appendToCriticalContext(body, { identifiers: [], constraints: [] })).toBe(body);
  });
});
