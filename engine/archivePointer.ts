// The archive pointer (issue #15 §4, SPEC §19 `compression.archive_pointer`): one last line of every summary that
// tells the model the summarised turns are archived and searchable, with the conversation id and the API to use.
// Pure: the host passes the conversation id; the line is stripped before a body is read again (gate, extractive).

export const ARCHIVE_POINTER_MARKER = '[ARCHIVED TURNS]';

/** The pointer line for a conversation. */
export function archivePointerLine(conversationId: string): string {
  return (
    `${ARCHIVE_POINTER_MARKER} The turns summarised above are archived, not deleted (conversation ${conversationId}): ` +
    `search them with GET /v1/search?q=<words>&includeInactive=true, or read them with ` +
    `GET /v1/conversations/${conversationId}/messages?archived=true.`
  );
}

/** The body without pointer lines (a summary the model or an earlier compaction wrote may carry one). */
export function stripArchivePointer(body: string): string {
  return body
    .split('\n')
    .filter((line) => !line.trimStart().startsWith(ARCHIVE_POINTER_MARKER))
    .join('\n')
    .trimEnd();
}

/** The body ending with exactly one pointer line for this conversation. */
export function withArchivePointer(body: string, conversationId: string): string {
  return `${stripArchivePointer(body)}\n${archivePointerLine(conversationId)}`;
}
