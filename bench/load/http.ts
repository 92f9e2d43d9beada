// The benchmark's HTTP client: node:http with one keep-alive agent (as many sockets as concurrent callers), JSON in
// and out, a per-request timeout, and the elapsed time of every request. It never throws: a network error or a
// timeout is an answer with status 0 and `error` set, so the callers only count.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Answer<T = any> {
  /** HTTP status; 0 when no answer came (timeout or network error). */
  status: number;
  body: T;
  /** Request start → whole answer read. */
  ms: number;
  /** When started (performance.now()). */
  startedAt: number;
  error?: 'timeout' | 'network';
  errorMessage?: string;
}

export interface RequestOptions {
  /** Bearer token. */
  token?: string;
  body?: unknown;
  timeoutMs?: number;
}

export class JsonHttp {
  readonly agent: http.Agent;
  readonly base: URL;

  constructor(baseUrl: string, maxSockets: number) {
    this.base = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' });
  }

  request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string | number> = { accept: 'application/json' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const startedAt = performance.now();
    return new Promise((resolve) => {
      let settled = false;
      const finish = (answer: Omit<Answer<T>, 'ms' | 'startedAt'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...answer, ms: performance.now() - startedAt, startedAt });
      };
      const req = http.request(
        {
          agent: this.agent,
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path,
          headers,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any = text;
            try {
              body = text === '' ? null : JSON.parse(text);
            } catch {
              // not JSON: keep the text
            }
            finish({ status: res.statusCode ?? 0, body });
          });
          res.on('error', (err) => finish({ status: 0, body: null as T, error: 'network', errorMessage: err.message }));
        },
      );
      const timer = setTimeout(() => {
        finish({
          status: 0,
          body: null as T,
          error: 'timeout',
          errorMessage: `no answer within ${options.timeoutMs} ms`,
        });
        req.destroy();
      }, options.timeoutMs ?? 30_000);
      req.on('error', (err) => finish({ status: 0, body: null as T, error: 'network', errorMessage: err.message }));
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** What an answer counts as: `2xx`, `4xx 409`, `timeout`, `network`. */
export function outcomeOf(answer: Answer): string {
  if (answer.error) return answer.error;
  return String(answer.status);
}

export const isSuccess = (answer: Answer) => answer.status >= 200 && answer.status < 300;
