// Text rendering for `dctx` (pure): search results, status, compaction lists, import summaries. Colour only when the
// caller says the output is a terminal.
import type {
  CompactionReport,
  CompactionSummary,
  ConversationStatusBody,
  ReplayResult,
  SearchResult,
} from '../../clients/httpClient.js';
import type { ImportResult } from '../../clients/importTranscript.js';

const BOLD_YELLOW = '\u001b[1;33m';
const DIM = '\u001b[2m';
const RESET = '\u001b[0m';

const int = (n: number | null | undefined): string =>
  typeof n === 'number' ? Math.round(n).toLocaleString('en-US') : '-';
const pct = (n: number): string => `${n.toFixed(1)}%`;
/** The threshold percent is a fraction (0.75); shown as 75%. */
const fraction = (p: number): string => `${Number((p <= 1 ? p * 100 : p).toFixed(1))}%`;
const shortId = (id: string): string => (id.length > 13 ? `${id.slice(0, 8)}…` : id);

/** Renders the `>>>match<<<` markers of a snippet: highlighted on a terminal, kept as they are otherwise. */
export function highlightSnippet(snippet: string, tty: boolean): string {
  const flat = snippet.replace(/\s+/g, ' ').trim();
  return tty ? flat.replace(/>>>([\s\S]*?)<<</g, `${BOLD_YELLOW}$1${RESET}`) : flat;
}

export function formatSearchResults(
  results: readonly SearchResult[],
  options: { tty: boolean; offset?: number },
): string {
  if (results.length === 0) return 'No matches.';
  const lines: string[] = [];
  results.forEach((r, i) => {
    const n = (options.offset ?? 0) + i + 1;
    const tool = r.tool_name ? ` tool=${r.tool_name}` : '';
    const head = `${n}. [${r.role}] session ${shortId(r.session_id)}  ${r.timestamp}  (${r.source}${r.model ? `, ${r.model}` : ''}${tool})`;
    lines.push(options.tty ? `${DIM}${head}${RESET}` : head, `   ${highlightSnippet(r.snippet, options.tty)}`);
  });
  return lines.join('\n');
}

export function formatStatus(s: ConversationStatusBody): string {
  const rows: [string, string][] = [
    ['conversation', `${s.conversationId} (tenant ${s.tenantId})`],
    ['session', s.sessionId],
    ['model', `${s.model}${s.provider ? ` (${s.provider})` : ''}, window ${int(s.contextLength)} tokens`],
    [
      'context',
      `${int(s.contextTokens)} tokens (${pct(s.usagePercent)} of the window); threshold ${int(s.thresholdTokens)} (${fraction(s.thresholdPercent)})`,
    ],
    [
      'last reading',
      s.lastPromptTokens > 0 ? `${int(s.lastPromptTokens)} prompt tokens` : 'none since the last compaction',
    ],
    ['messages', `${int(s.activeMessages)} active`],
    ['compactions', int(s.compressionCount)],
  ];
  if (s.lastCompaction) {
    const c = s.lastCompaction;
    const saved = c.stats ? `, ${int(c.stats.tokensBefore)} → ${int(c.stats.tokensAfter)} tokens` : '';
    rows.push(['last compaction', `${c.status} (${c.trigger})${saved}${c.error ? `: ${c.error}` : ''}`]);
  }
  if (s.blockedBy) rows.push(['blocked by', s.blockedBy]);
  if (s.ineffectiveStrikes || s.fallbackStreak) {
    rows.push(['strikes', `ineffective ${s.ineffectiveStrikes}, fallback streak ${s.fallbackStreak}`]);
  }
  if (s.pendingItems) rows.push(['pending', `${s.pendingItems} item(s) queued`]);
  for (const notice of s.notices ?? []) rows.push(['notice', notice]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** The record's error, else why the built-in compressor stood in for the configured engine (SPEC §10.3). */
const reasonOf = (c: CompactionSummary): string =>
  (c.error ?? c.engineFallback ?? '').replace(/\s+/g, ' ').slice(0, 80);

export function formatCompactions(compactions: readonly CompactionSummary[]): string {
  if (compactions.length === 0) return 'No compactions.';
  return table(
    ['ID', 'CONVERSATION', '#', 'TRIGGER', 'STATUS', 'ENGINE', 'TOKENS', 'CREATED', 'ERROR'],
    compactions.map((c) => [
      c.id,
      c.conversationId,
      String(c.seq),
      c.trigger,
      c.replayable ? `${c.status}*` : c.status,
      c.engine,
      c.stats?.tokensBefore !== undefined ? `${int(c.stats.tokensBefore)} → ${int(c.stats.tokensAfter)}` : '-',
      c.createdAt,
      reasonOf(c),
    ]),
  );
}

/** One manual compaction's outcome: status, tokens, what was summarised, and the notice the user sees. */
export function formatCompactionReport(r: CompactionReport): string {
  const lines = [`Compaction ${r.compactionId} (${r.trigger}): ${r.status}${r.noopReason ? ` (${r.noopReason})` : ''}`];
  if (r.stats && r.status !== 'noop') {
    lines.push(`tokens       ${int(r.stats.tokensBefore)} → ${int(r.stats.tokensAfter)} (estimated)`);
    lines.push(`replaced     ${int(r.stats.droppedCount)} messages (archived, still searchable)`);
  }
  lines.push(`session      ${r.sessionId}`);
  if (r.notice) lines.push(`notice       ${r.notice}`);
  if (r.error) lines.push(`error        ${r.error}`);
  return lines.join('\n');
}

export function formatReplay(result: ReplayResult): string {
  const what: Record<ReplayResult['status'], string> = {
    replaced: 'the new summary replaced the fallback in the live transcript',
    recorded: 'the new summary was recorded on the compaction (it is no longer the latest of its session)',
    failed: 'the summary could not be regenerated',
  };
  const lines = [`Replay of ${result.compactionId}: ${result.status} (${what[result.status]})`];
  if (result.reason) lines.push(`reason: ${result.reason}`);
  if (result.error) lines.push(`error: ${result.error}`);
  return lines.join('\n');
}

export function formatImportResult(r: ImportResult): string {
  const s = r.status;
  return [
    `Imported ${int(r.messages)} messages in ${int(r.batches)} batches into conversation '${r.conversationId}'.`,
    `messages     ${int(s.activeMessages)} active`,
    `compactions  ${int(s.compressionCount)}`,
    `tokens       ${int(s.contextTokens)} in context (${pct(s.usagePercent)} of ${int(s.contextLength)}; threshold ${int(s.thresholdTokens)})`,
  ].join('\n');
}
