// Latency summaries for the load benchmark: nearest-rank percentiles over every recorded sample (no histogram
// buckets: a run records at most a few hundred thousand samples).

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of `sorted` (ascending); NaN when empty. */
export function percentileOf(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function summarize(values: readonly number[]): Summary {
  const sorted = Float64Array.from(values).sort();
  const list = Array.from(sorted);
  const sum = list.reduce((a, b) => a + b, 0);
  return {
    n: list.length,
    p50: percentileOf(list, 50),
    p95: percentileOf(list, 95),
    p99: percentileOf(list, 99),
    max: list.length > 0 ? list[list.length - 1]! : Number.NaN,
    mean: list.length > 0 ? sum / list.length : Number.NaN,
  };
}

/** Counts by key (status codes, error kinds). */
export class Tally {
  readonly counts = new Map<string, number>();
  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }
  total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }
  toString(): string {
    if (this.counts.size === 0) return 'none';
    return [...this.counts].map(([key, n]) => `${key}: ${n}`).join(', ');
  }
}

/** Milliseconds as text: one decimal below 10 ms, whole above, "—" for no value. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (value < 10) return `${value.toFixed(1)} ms`;
  if (value < 10_000) return `${Math.round(value).toLocaleString('en-US')} ms`;
  return `${(value / 1000).toFixed(1)} s`;
}

export const int = (value: number): string =>
  Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '—';

export const sleep = (milliseconds: number) => new Promise<void>((resolve) => setTimeout(resolve, milliseconds));
