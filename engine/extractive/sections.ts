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

function list(items: readonly string[]): string {
  return items.length === 0 ? '' : items.map((item) => `- ${item}`).join('\n');
}

/** The body in the template of SPEC §8.5.5 (headings exact, in order). */
export function renderSections(s: SummarySections): string {
  const decisions = [
    ...s.decisions.map((d) => CURRENT_DECISION + d),
    ...s.superseded.map((d) => SUPERSEDED_DECISION + d),
  ];
  return [
    '## Goal',
    list([...s.goal, ...s.user]),
    '## Constraints & Preferences',
    list(s.constraints),
    '## Progress',
    '### Done',
    list(s.done),
    '### In Progress',
    list(s.inProgress),
    '### Blocked',
    list(s.blocked),
    '## Key Decisions',
    list(decisions),
    '## Relevant Files',
    list(s.files),
    '## Next Steps',
    list(s.nextSteps),
    '## Critical Context',
    s.critical.length === 0 ? '' : s.critical.map((id) => `- \`${id}\``).join('\n'),
  ]
    .filter((line) => line !== '')
    .join('\n');
}

type SectionKey = keyof SummarySections;

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
