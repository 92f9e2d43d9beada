// Chat turns of one conversation run one at a time in this gateway, in arrival order (workers/gateway/chatTurns.ts).
/** One turn at a time per conversation in this gateway, in arrival order (as the workflow's queue runs them). */
export class TurnQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return mine;
  }
}
