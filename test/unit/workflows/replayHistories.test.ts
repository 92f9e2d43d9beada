// Determinism guard (DESIGN.md §3): every committed workflow history (test/support/fixtures/histories/*.json, recorded by
// test/support/fixtures/histories/record.ts) must replay against the current workflows/ code. Replay runs locally in the
// worker's core — no Temporal server, no database. A change to workflows/ that fails here would break workflows in
// flight: it needs `patched()` (or a new workflow type), not a re-recording.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type ReplayResult, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../../../workers/runtime/createWorker.js';

const HISTORIES_DIR = fileURLToPath(new URL('../../support/fixtures/histories/', import.meta.url));
const REORDERED_PATH = fileURLToPath(
  new URL('../../support/fixtures/workflows/reorderedCompaction.ts', import.meta.url),
);

interface HistoryJson {
  events: Array<{ eventType: string; workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }>;
}

const files = readdirSync(HISTORIES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const histories = files.map((file) => ({
  workflowId: file.replace(/\.json$/, ''),
  history: JSON.parse(readFileSync(`${HISTORIES_DIR}${file}`, 'utf8')) as HistoryJson,
}));

const noop = () => undefined;
const logger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

let productBundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  productBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger });
});

describe('committed histories', () => {
  it('cover every workflow type and the paths that matter for determinism', () => {
    const types = new Set(
      histories.map((h) => h.history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name),
    );
    expect([...types].sort()).toEqual(['compactionWorkflow', 'conversationWorkflow', 'replayCompactionWorkflow']);
    const events = new Set(histories.flatMap((h) => h.history.events.map((e) => e.eventType)));
    for (const type of [
      'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED', // batchStored, summaryReplaced
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', // compact
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED',
      'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED', // compaction child
      'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED',
      'EVENT_TYPE_ACTIVITY_TASK_FAILED', // the throwing summarizer → fallback
      'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
      'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
      'EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED', // replay → conversation
    ]) {
      expect(events, type).toContain(type);
    }
  });

  it('cover both sides of every patch: the paths before and after each patched change', () => {
    const patchesOf = (h: (typeof histories)[number]) =>
      (h.history.events as Array<Record<string, unknown>>)
        .filter(
          (e) =>
            e.eventType === 'EVENT_TYPE_MARKER_RECORDED' &&
            (e.markerRecordedEventAttributes as { markerName: string }).markerName === 'core_patch',
        )
        .map((e) => {
          const details = (
            e.markerRecordedEventAttributes as { details: Record<string, { payloads: [{ data: string }] }> }
          ).details;
          return (
            JSON.parse(Buffer.from(details['patch-data']!.payloads[0].data, 'base64').toString()) as { id: string }
          ).id;
        });
    const patched = new Set(histories.flatMap(patchesOf));
    expect([...patched].sort()).toEqual([
      'align-begins',
      'background-compaction',
      'background-start-unawaited',
      'coalesce-batches',
      'fold-at-settle',
      'local-publish',
      'local-respond',
      'replay-claim-check',
    ]);
    // The first generation has no marker at all: it replays the unpatched paths.
    const later = (h: (typeof histories)[number]) =>
      /^(claim-check|quiet-batches|local-publish|local-respond|background-start|align-begins|gateway-turns|fold-at-settle)\./.test(
        h.workflowId,
      );
    expect(histories.filter((h) => !later(h) && patchesOf(h).length > 0)).toEqual([]);
  });

  it('replay against workflows/ without a single error', async () => {
    expect(histories.length).toBeGreaterThanOrEqual(51);
    const results: ReplayResult[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: productBundle }, histories)) {
      results.push(result);
    }
    expect(
      results.map((r) => ({ workflowId: r.workflowId, error: r.error ? `${r.error.name}: ${r.error.message}` : null })),
    ).toEqual(histories.map((h) => ({ workflowId: h.workflowId, error: null })));
  });
});

describe('the guard fails on a nondeterministic change', () => {
  it('replaying a compaction history against a reordered compaction workflow is a DeterminismViolationError', async () => {
    const reordered = await bundleWorkflowCode({ workflowsPath: REORDERED_PATH, logger });
    const compaction = histories.find((h) => h.workflowId === 'manual-compaction.compaction-1');
    expect(compaction).toBeDefined();
    const error = await Worker.runReplayHistory(
      { workflowBundle: reordered },
      compaction!.history,
      compaction!.workflowId,
    ).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(DeterminismViolationError);
    // It fails exactly at the swapped phase (not at some unrelated difference of the fixture).
    expect((error as Error).message).toMatch(/align/);
    expect((error as Error).message).toMatch(/prune/);

    // And through the batch API the test above uses: the violation is reported as the result's error.
    const results: ReplayResult[] = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle: reordered }, [compaction!])) results.push(r);
    expect(results).toHaveLength(1);
    expect(results[0]!.error).toBeInstanceOf(DeterminismViolationError);
  });
});
