// CPU share per process over a window, from /proc (Linux): every second the sampler reads utime + stime of
//   - the product's process tree (the dev.ts child and its descendants): the node process that runs gateway and
//     worker together (as `npm start` does), split by thread — its main JavaScript thread (HTTP gateway, activities,
//     the worker's dispatch), the Temporal core SDK's Rust threads (`tokio-runtime-w`: gRPC, polling) and the other
//     threads (workflow isolates in worker threads, V8 GC, libuv pool) —, the tsx wrapper, and the Temporal dev
//     server (`temporal`),
//   - the PostgreSQL processes, classified by pg_stat_activity: the product's backends (its database, application
//     name `durable-context`), the benchmark's own connections (poller, physical limit), autovacuum workers on the
//     database, the cluster's background processes (WAL writer, checkpointer, …: shared with other databases) and
//     backends of other databases (other test suites on this machine),
//   - this benchmark process (the load generator),
// and sums each process's growth between consecutive samples; "rest of the machine" is /proc/stat's busy time minus
// all of the above. Shares are in % of one core (this machine has `cores` of them). The same samples read the
// resident memory of the product's node process (VmRSS of /proc/<pid>/status: at the window's end and its highest).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { LIMIT_APPLICATION_NAME } from './limit.js';
import { BENCH_APPLICATION_NAME } from './stack.js';

const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

export const CPU_GROUPS = [
  'gateway + worker: main JS thread',
  'gateway + worker: Temporal core (Rust)',
  'gateway + worker: other threads',
  'tsx wrapper',
  'Temporal dev server',
  'PostgreSQL: product backends',
  'PostgreSQL: bench connections',
  'PostgreSQL: autovacuum (this db)',
  'PostgreSQL: background (cluster)',
  'PostgreSQL: other databases',
  'bench process (load generator)',
  'other dev.ts children',
] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  ticks: number;
}

function readStat(pid: number, path = `/proc/${pid}/stat`): ProcStat | null {
  try {
    const text = readFileSync(path, 'utf8');
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const fields = text.slice(close + 2).split(' ');
    // fields[0] = state (field 3); ppid = field 4; utime = 14, stime = 15.
    return { pid, ppid: Number(fields[1]), comm, ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

function allProcesses(): ProcStat[] {
  const list: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) list.push(stat);
  }
  return list;
}

/** Busy and total jiffies of the machine (/proc/stat). */
function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
}

function descendants(root: number, processes: readonly ProcStat[]): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: ProcStat[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    for (const child of children.get(pid) ?? []) {
      out.push(child);
      stack.push(child.pid);
    }
  }
  return out;
}

/** The threads of the product's node process: main JS thread (tid = pid), Temporal core's tokio threads, the rest. */
function threadsOf(pid: number): Map<string, { group: CpuGroup; stat: ProcStat | null }> {
  const threads = new Map<string, { group: CpuGroup; stat: ProcStat | null }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    const stat = readStat(pid, `/proc/${pid}/task/${tid}/stat`);
    if (!stat) continue;
    const group: CpuGroup =
      Number(tid) === pid
        ? 'gateway + worker: main JS thread'
        : stat.comm.startsWith('tokio')
          ? 'gateway + worker: Temporal core (Rust)'
          : 'gateway + worker: other threads';
    threads.set(`${pid}/${tid}`, { group, stat });
  }
  return threads;
}

/** Resident memory of a process in bytes (VmRSS of /proc/<pid>/status), or null when it cannot be read. */
export function residentBytes(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** A row of pg_stat_activity, as far as telling its process's group needs. */
export interface ActivityRow {
  pid: number;
  datname: string | null;
  application_name: string | null;
  backend_type: string | null;
}

/** The group of a PostgreSQL process (pgWaits.ts samples the `PostgreSQL: product backends` alone). */
export function postgresGroup(row: ActivityRow, database: string | null): CpuGroup {
  if (row.backend_type === 'autovacuum worker' && row.datname === database) return 'PostgreSQL: autovacuum (this db)';
  if (row.datname === null || row.backend_type !== 'client backend') {
    return row.datname === database || row.datname === null
      ? 'PostgreSQL: background (cluster)'
      : 'PostgreSQL: other databases';
  }
  if (row.datname !== database) return 'PostgreSQL: other databases';
  const app = row.application_name ?? '';
  if (app === BENCH_APPLICATION_NAME || app === LIMIT_APPLICATION_NAME) return 'PostgreSQL: bench connections';
  return 'PostgreSQL: product backends';
}

export interface CpuReport {
  seconds: number;
  cores: number;
  /** CPU seconds per group. */
  groups: Map<CpuGroup | 'rest of the machine', number>;
  /** Busy share of the whole machine, % of all cores. */
  machineBusyPercent: number;
  /** The pg_stat_activity query failed (no SQL access): PostgreSQL groups are missing. */
  postgresSampled: boolean;
  /** Bytes the Temporal dev server wrote to storage in the window (/proc/<pid>/io write_bytes: its SQLite state). */
  temporalWrittenBytes: number;
  /** Resident memory of the product's node process (gateway + worker), at the last sample and the highest sampled. */
  productResident: { last: number; highest: number } | null;
}

/** write_bytes of /proc/<pid>/io, or null. */
function writtenBytes(pid: number): number | null {
  try {
    const match = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** Samples every `intervalMs` until `stop()`; the product tree from `rootPid`, PostgreSQL through `db`. */
export function sampleCpu(options: { rootPid: number | null; db: pg.Pool | null; database: string | null }) {
  const last = new Map<string, { ticks: number; group: CpuGroup }>();
  const totals = new Map<CpuGroup | 'rest of the machine', number>();
  let postgresSampled = options.db !== null;
  const started = performance.now();
  const machineStart = machineTicks();
  let running = true;
  const temporalWrites = new Map<number, { first: number; last: number }>();
  let productResident: { last: number; highest: number } | null = null;
  const sampleResident = (pid: number) => {
    const bytes = residentBytes(pid);
    if (bytes !== null) productResident = { last: bytes, highest: Math.max(bytes, productResident?.highest ?? 0) };
  };

  const sample = async () => {
    /** What is sampled: a process (key: its pid) or one thread of the product's node process (key: pid/tid). */
    const units = new Map<string, { group: CpuGroup; stat: ProcStat | null }>();
    const processes = allProcesses();
    const byPid = new Map(processes.map((p) => [p.pid, p]));
    const addProcess = (pid: number, group: CpuGroup) =>
      units.set(String(pid), { group, stat: byPid.get(pid) ?? readStat(pid) });
    if (options.rootPid !== null) {
      const below = descendants(options.rootPid, processes);
      // A profiled run (--cpu-prof) starts node itself: the root is the product's process, no tsx wrapper above it.
      if (byPid.get(options.rootPid)?.comm === 'node' && !below.some((p) => p.comm === 'node')) {
        for (const [key, unit] of threadsOf(options.rootPid)) units.set(key, unit);
        sampleResident(options.rootPid);
      } else addProcess(options.rootPid, 'tsx wrapper');
      for (const p of below) {
        if (p.comm === 'temporal') {
          addProcess(p.pid, 'Temporal dev server');
          const written = writtenBytes(p.pid);
          if (written !== null) {
            const seen = temporalWrites.get(p.pid);
            temporalWrites.set(p.pid, { first: seen?.first ?? written, last: written });
          }
        } else if (p.comm === 'node') {
          for (const [key, unit] of threadsOf(p.pid)) units.set(key, unit);
          sampleResident(p.pid);
        } else addProcess(p.pid, 'other dev.ts children');
      }
    }
    addProcess(process.pid, 'bench process (load generator)');
    if (options.db) {
      try {
        const { rows } = await options.db.query<ActivityRow>(
          'SELECT pid, datname, application_name, backend_type FROM pg_stat_activity',
        );
        for (const row of rows) addProcess(row.pid, postgresGroup(row, options.database));
      } catch {
        postgresSampled = false;
      }
    }
    for (const [key, { group, stat }] of units) {
      if (!stat) continue;
      const before = last.get(key);
      if (before) totals.set(group, (totals.get(group) ?? 0) + (stat.ticks - before.ticks) / TICKS);
      last.set(key, { ticks: stat.ticks, group });
    }
  };

  const loop = (async () => {
    while (running) {
      await sample();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();

  return {
    stop: async (): Promise<CpuReport> => {
      running = false;
      await loop;
      await sample();
      const seconds = (performance.now() - started) / 1000;
      const machineEnd = machineTicks();
      const busySeconds = (machineEnd.busy - machineStart.busy) / TICKS;
      let known = 0;
      for (const value of totals.values()) known += value;
      totals.set('rest of the machine', Math.max(0, busySeconds - known));
      const totalTicks = machineEnd.total - machineStart.total;
      return {
        seconds,
        cores: availableParallelism(),
        groups: totals,
        machineBusyPercent: totalTicks > 0 ? (100 * (machineEnd.busy - machineStart.busy)) / totalTicks : Number.NaN,
        postgresSampled,
        temporalWrittenBytes: [...temporalWrites.values()].reduce((sum, w) => sum + w.last - w.first, 0),
        productResident,
      };
    },
  };
}
