// Which commit a compaction result gets (SPEC §13.2 / §13.3): by rotation when its record asked for one
// (`compression.in_place: false`) and the workflow generated the new session id, else in place (always for hygiene).
import type { Kysely } from 'kysely';
import type { CompactionRow, Database } from '../schema.js';
import { commitInPlace } from './inPlace.js';
import { commitRotation } from './rotation.js';
import type { CommitInput, CommitOutcome } from './types.js';

export function commitCompaction(
  db: Kysely<Database>,
  tenantId: string,
  record: Pick<CompactionRow, 'session_id' | 'in_place'>,
  input: CommitInput,
  newSessionId: string | null,
): Promise<CommitOutcome> {
  return newSessionId !== null && record.in_place === false
    ? commitRotation(db, tenantId, { ...input, oldSessionId: record.session_id, newSessionId })
    : commitInPlace(db, tenantId, { ...input, sessionId: record.session_id });
}
