// Workflow ids and task queue (DESIGN.md §3). Pure string helpers, shared by workflow and client code.

export const CONVERSATIONS_TASK_QUEUE = 'conversations';

export function conversationWorkflowId(tenantId: string, conversationId: string): string {
  return `conv:${tenantId}:${conversationId}`;
}

export function compactionWorkflowId(tenantId: string, sessionId: string, n: number): string {
  return `compact:${tenantId}:${sessionId}:${n}`;
}

export function replayWorkflowId(tenantId: string, compactionId: string, n: number): string {
  return `replay:${tenantId}:${compactionId}:${n}`;
}

/** One webhook endpoint's deliveries (issue #14 §2). */
export function webhookWorkflowId(tenantId: string, webhookId: string): string {
  return `webhook:${tenantId}:${webhookId}`;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** SPEC §13.3: `YYYYMMDD_HHMMSS_<6 lowercase hex>` from the clock and workflow-side randomness. */
export function newSessionId(nowMs: number, randomHex: string): string {
  const d = new Date(nowMs);
  const date = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  return `${date}_${time}_${randomHex
    .replace(/[^0-9a-f]/g, '')
    .slice(0, 6)
    .padEnd(6, '0')}`;
}
