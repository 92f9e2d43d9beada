// The sections of an extractive summary (SPEC §8.5.5 headings), their rendering, and the reading of a previous
// summary body back into sections so that an iterative update keeps its items (issue #15 §2).

export interface SummarySections {
  goal: string[];
  /** Later on-topic user statements and requests, in order ("User said: …", "User asked: …"). */
  user: string[];
  constraints: string[];
  done: string[];
  inProgress: string[];
  blocked: string[];
  decisions: string[];
  superseded: string[];
  files: string[];
  nextSteps: string[];
  critical: string[];
}

export function emptySections(): SummarySections {
  return {
    goal: [],
    user: [],
    constraints: [],
    done: [],
    inProgress: [],
    blocked: [],
    decisions: [],
    superseded: [],
    files: [],
    nextSteps: [],
    critical: [],
  };
}

export const CURRENT_DECISION = 'Current: ';
export const SUPERSEDED_DECISION = 'Superseded (no longer current): ';

type SectionKey = keyof SummarySections;

/** The body's layout (SPEC §8.5.5 headings exact, in order): each heading, then the items of its sections. */
const LAYOUT: readonly (string | readonly SectionKey[])[] = [
  '## Goal',
  ['goal', 'user'],
  '## Constraints & Preferences',
  ['constraints'],
  '## Progress',
  '### Done',
  ['done'],
  '### In Progress',
  ['inProgress'],
  '### Blocked',
  ['blocked'],
  '## Key Decisions',
  ['decisions', 'superseded'],
  '## Relevant Files',
  ['files'],
  '## Next Steps',
  ['nextSteps'],
  '## Critical Context',
  ['critical'],
];

/** The heading lines, in order. */
export const HEADING_LINES: readonly string[] = LAYOUT.filter((entry): entry is string => typeof entry === 'string');

/** What an item line holds around the item: `- ${before}${item}${after}` (ASCII). */
const ITEM_FRAME: Partial<Record<SectionKey, { before: string; after: string }>> = {
  decisions: { before: CURRENT_DECISION, after: '' },
  superseded: { before: SUPERSEDED_DECISION, after: '' },
  critical: { before: '`', after: '`' },
};

function itemLine(key: SectionKey, item: string): string {
  const frame = ITEM_FRAME[key];
  return frame ? `- ${frame.before}${item}${frame.after}` : `- ${item}`;
}

/** The bytes an item's line adds to the item itself (all ASCII). */
export function itemFrameBytes(key: SectionKey): number {
  const frame = ITEM_FRAME[key];
  return 2 + (frame ? frame.before.length + frame.after.length : 0);
}

/** The body in the template of SPEC §8.5.5: each heading, then one line per item; an empty section has no line. */
export function renderSections(s: SummarySections): string {
  const lines: string[] = [];
  for (const entry of LAYOUT) {
    if (typeof entry === 'string') lines.push(entry);
    else for (const key of entry) for (const item of s[key]) lines.push(itemLine(key, item));
  }
  return lines.join('\n');
}

const HEADING_TO_KEY: Readonly<Record<string, SectionKey>> = {
  goal: 'goal',
  'constraints & preferences': 'constraints',
  done: 'done',
  'in progress': 'inProgress',
  blocked: 'blocked',
  'key decisions': 'decisions',
  'relevant files': 'files',
  'next steps': 'nextSteps',
  'critical context': 'critical',
};

const FILLER = /^\(?(none|none recorded|not recorded|unknown|nothing recorded)\)?\.?$/i;
const USER_ITEM = /^User (said|asked): /;

/**
 * Reads a previous summary body (ours, an LLM's or §9.5's) into sections: list items by heading; our own
 * decision labels back into current and superseded decisions; the Critical Context section is returned as raw text
 * (its identifiers are re-ranked with the window's).
 */
export function parseSections(body: string): { sections: SummarySections; criticalText: string } {
  const sections = emptySections();
  const critical: string[] = [];
  let key: SectionKey | null = null;
  for (const raw of body.split('\n')) {
    const heading = /^#{2,3}\s+(.+?)\s*$/.exec(raw);
    if (heading) {
      const name = (heading[1] as string).toLowerCase();
      key = name === 'progress' ? key : (HEADING_TO_KEY[name] ?? null);
      continue;
    }
    if (key === 'critical') {
      critical.push(raw);
      continue;
    }
    const item = raw.replace(/^\s*[-*]\s+/, '').trim();
    if (key === null || item.length === 0 || FILLER.test(item)) continue;
    if (key === 'decisions') {
      if (item.startsWith(SUPERSEDED_DECISION)) sections.superseded.push(item.slice(SUPERSEDED_DECISION.length));
      else sections.decisions.push(item.startsWith(CURRENT_DECISION) ? item.slice(CURRENT_DECISION.length) : item);
    } else if (key === 'goal' && USER_ITEM.test(item)) {
      sections.user.push(item);
    } else {
      sections[key].push(item);
    }
  }
  return { sections, criticalText: critical.join('\n') };
}
