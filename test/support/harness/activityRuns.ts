// How the activities of a workflow ran, read from its history: as activity tasks (scheduled, started with an
// attempt) or as local activities, which leave only a marker (`core_local_activity`) with their type and attempt.
import type { temporal } from '@temporalio/proto';

const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

interface LocalActivityMarker {
  activity_type?: string;
  attempt?: number;
}

function localActivityOf(event: temporal.api.history.v1.IHistoryEvent): LocalActivityMarker | null {
  const marker = event.markerRecordedEventAttributes;
  if (marker?.markerName !== LOCAL_ACTIVITY_MARKER) return null;
  const data = marker.details?.data?.payloads?.[0]?.data;
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as LocalActivityMarker) : null;
}

/** Activity type → how many times it was scheduled as a task or recorded as a finished local activity. */
export function activityRuns(history: temporal.api.history.v1.IHistory): Record<string, number> {
  const runs: Record<string, number> = {};
  for (const event of history.events ?? []) {
    const name =
      event.activityTaskScheduledEventAttributes?.activityType?.name ?? localActivityOf(event)?.activity_type;
    if (name) runs[name] = (runs[name] ?? 0) + 1;
  }
  return runs;
}

/** How many workflow tasks timed out (a worker that took one died before it answered). */
export function timedOutWorkflowTasks(history: temporal.api.history.v1.IHistory): number {
  return (history.events ?? []).filter((e) => e.workflowTaskTimedOutEventAttributes).length;
}

/**
 * A workflow's history once its last workflow task is answered: a local activity's marker is written with the
 * task's completion, after the activity's own effects (a status in PostgreSQL) can already be seen.
 */
export async function settledHistory(
  handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> },
  timeoutMs = 15_000,
): Promise<temporal.api.history.v1.IHistory> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const lastCompleted = events.findLastIndex((e) => e.workflowTaskCompletedEventAttributes);
    const pending = events.slice(lastCompleted + 1).some((e) => e.workflowTaskScheduledEventAttributes);
    if (!pending || Date.now() > deadline) return history;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
