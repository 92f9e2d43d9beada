// The main job as a newcomer runs it: `npm run demo` with no DATABASE_URL (embedded PGlite), then the Temporal UI in
// a real headless Chromium (playwright-core) showing the demo's conversation workflows filtered by TenantId.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/temporal/devServer.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let child: ChildProcess | undefined;
let output = '';
let dataDir = '';
const ports = { api: 0, temporal: 0, ui: 0 };

function waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${pattern}; output so far:\n${output}`)),
      timeoutMs,
    );
    const check = () => {
      const match = output.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
        return true;
      }
      return false;
    };
    if (check()) return;
    const onData = () => {
      if (check()) child?.stdout?.off('data', onData);
    };
    child?.stdout?.on('data', onData);
    child?.once('exit', (code) => reject(new Error(`npm run demo exited with ${code}:\n${output}`)));
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'dctx-demo-'));
  ports.api = await freePort();
  ports.temporal = await freePort();
  ports.ui = await freePort();
  const env = { ...process.env };
  delete env.DATABASE_URL;
  child = spawn('npm', ['run', 'demo'], {
    cwd: root,
    env: {
      ...env,
      DURABLE_CONTEXT_DATA: dataDir,
      GATEWAY_PORT: String(ports.api),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  await waitFor(/Demo finished\./, 420_000);
}, 480_000);

afterAll(async () => {
  if (child?.pid && child.exitCode === null) {
    process.kill(-child.pid, 'SIGINT');
    await new Promise((r) => setTimeout(r, 3_000));
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('npm run demo on embedded defaults', () => {
  it('runs on embedded PGlite, prints the URLs, the compactions and a 2-character Japanese search result', () => {
    expect(output).toContain('embedded PGlite');
    expect(output).toContain(`API:         http://127.0.0.1:${ports.api}/v1`);
    expect(output).toContain(`Temporal UI: http://127.0.0.1:${ports.ui}`);
    const compactions = Number(output.match(/Compactions \((\d+)\):/)?.[1] ?? 0);
    expect(compactions).toBeGreaterThan(0);
    expect(output).toMatch(/Search '圧縮' .*: [1-9]\d* shown/);
    expect(output).toContain('>>>圧縮<<<');
    expect(existsSync(join(dataDir, 'pglite'))).toBe(true);
    // The dev server's store runs in write-ahead-log mode (workers/dev.ts): its log file sits beside the database.
    expect(existsSync(join(dataDir, 'temporal.sqlite'))).toBe(true);
    expect(existsSync(join(dataDir, 'temporal.sqlite-wal'))).toBe(true);
  });

  it('serves the API (healthz, docs) while it keeps running', async () => {
    expect((await fetch(`http://127.0.0.1:${ports.api}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.api}/docs/json`)).status).toBe(200);
  });

  it('the Temporal UI in headless Chromium lists the demo conversations filtered by TenantId', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      const query = encodeURIComponent('TenantId="demo"');
      await page.goto(`http://127.0.0.1:${ports.ui}/namespaces/default/workflows?query=${query}`, { timeout: 60_000 });
      await page.getByText('conv:demo:demo-coding-agent').first().waitFor({ timeout: 60_000 });
      await page.getByText('conv:demo:demo-japanese').first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: join(dataDir, 'temporal-ui.png') });
      const html = await page.content();
      expect(html).toContain('conv:demo:demo-coding-agent');
    } finally {
      await browser.close();
    }
  });
});
