// Counts the writes to sockets while a function runs: each write to a local socket is one flight, one wake-up of
// the peer (infra/db/pipelinedTransactions.ts). Every socket of the process counts: run nothing else meanwhile.
import net from 'node:net';

/** Runs `fn`, counting the writes to any socket (each entry: the chunks of one write). */
export async function countingWrites<T>(fn: () => Promise<T>): Promise<{ result: T; writes: number[] }> {
  const writes: number[] = [];
  const proto = net.Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const { _write, _writev } = proto;
  proto._write = function (this: unknown, ...args: unknown[]) {
    writes.push(1);
    return _write!.apply(this, args);
  };
  proto._writev = function (this: unknown, ...args: unknown[]) {
    writes.push((args[0] as unknown[]).length);
    return _writev!.apply(this, args);
  };
  try {
    return { result: await fn(), writes };
  } finally {
    proto._write = _write!;
    proto._writev = _writev!;
  }
}
