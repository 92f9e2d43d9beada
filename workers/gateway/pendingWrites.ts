// Writes the gateway finishes after it has answered (issue #12 bench: a drop-in reply is handed to the client while
// its commit runs). Nothing the client sent waits here — that is committed before any answer — only what the gateway
// keeps of its own answer, which the client's next request carries again anyway. What must come after such a write
// waits for it in this process: the next request of the same conversation (its history is matched against the
// stored one) and every read or write of the tenant's own API (read your writes). Across processes the write
// guards itself (conversationAppend.ts `after`).

/** A write that failed after its answer was sent: nothing waits for it, the process logs it. */
export type PendingWriteFailure = (error: unknown, where: { tenantId: string; conversationId: string }) => void;

export class PendingWrites {
  /** Per tenant, per conversation: the writes still running. */
  private readonly running = new Map<string, Map<string, Set<Promise<void>>>>();

  constructor(private onFailure: PendingWriteFailure = () => undefined) {}

  /** Where failures go from now on (the gateway's logger). */
  reportTo(onFailure: PendingWriteFailure): void {
    this.onFailure = onFailure;
  }

  /** Runs `write` without being waited for by its caller; whatever comes after it waits (`settled`). */
  add(tenantId: string, conversationId: string, write: () => Promise<unknown>): void {
    const tenant = this.running.get(tenantId) ?? new Map<string, Set<Promise<void>>>();
    this.running.set(tenantId, tenant);
    const writes = tenant.get(conversationId) ?? new Set<Promise<void>>();
    tenant.set(conversationId, writes);
    // A write that throws before its first await fails like one that rejects.
    const done: Promise<void> = (async () => write())().then(
      () => undefined,
      (error: unknown) => this.onFailure(error, { tenantId, conversationId }),
    );
    writes.add(done);
    void done.finally(() => {
      writes.delete(done);
      if (writes.size === 0 && tenant.get(conversationId) === writes) tenant.delete(conversationId);
      if (tenant.size === 0 && this.running.get(tenantId) === tenant) this.running.delete(tenantId);
    });
  }

  /** Resolves once the conversation's writes running now are done (at once when there are none). */
  settled(tenantId: string, conversationId: string): Promise<void> | null {
    const writes = this.running.get(tenantId)?.get(conversationId);
    return writes && writes.size > 0 ? Promise.all(writes).then(() => undefined) : null;
  }

  /** Resolves once the tenant's writes running now are done (null when there are none). */
  settledTenant(tenantId: string): Promise<void> | null {
    const tenant = this.running.get(tenantId);
    if (!tenant || tenant.size === 0) return null;
    return Promise.all([...tenant.values()].flatMap((writes) => [...writes])).then(() => undefined);
  }

  /** Resolves once every write running now is done (the gateway's shutdown). */
  async drain(): Promise<void> {
    await Promise.all([...this.running.keys()].map((tenantId) => this.settledTenant(tenantId)));
  }
}
