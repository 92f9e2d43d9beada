// The app-server processes of a worker (SPEC §15.2): one per configured `codex_app_server` provider, started on first
// use and started again when it has died (a crash, a kill): the threads live on in CODEX_HOME, so the next turn
// resumes its thread (`thread/resume`) in the new process and the session continues. A thread is loaded into a
// process once (`thread/start` creates it, `thread/resume` loads one the process has not seen).
import type { AppServerSettings } from '../llm/providers.js';
import { type AppServerLaunch, AppServerProcess } from './appServer.js';

/** The model provider the app-server is pointed at when the provider gives a `base_url`. */
const UPSTREAM_PROVIDER_ID = 'durable_context_upstream';

/** A value as TOML writes it on the `-c key=value` command line. */
function tomlValue(value: string | number | boolean): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * The `-c` overrides: what a host needs of an agent no one sits in front of (never ask for approval, no update
 * check, no plugins), the upstream when one is configured, then the provider's own `config` (its last word).
 */
export function launchOverrides(settings: AppServerSettings): string[] {
  const values: Record<string, string | number | boolean> = {
    approval_policy: 'never',
    sandbox_mode: settings.sandbox,
    check_for_update_on_startup: false,
    'features.plugins': false,
  };
  if (settings.upstream) {
    const prefix = `model_providers.${UPSTREAM_PROVIDER_ID}`;
    values.model_provider = UPSTREAM_PROVIDER_ID;
    values[`${prefix}.name`] = 'durable-context upstream';
    values[`${prefix}.base_url`] = settings.upstream.baseUrl;
    values[`${prefix}.wire_api`] = 'responses';
    if (settings.upstream.apiKeyEnv) values[`${prefix}.env_key`] = settings.upstream.apiKeyEnv;
    for (const [name, value] of Object.entries(settings.upstream.headers)) {
      values[`${prefix}.http_headers.${JSON.stringify(name)}`] = value;
    }
  }
  Object.assign(values, settings.config);
  return Object.entries(values).map(([key, value]) => `${key}=${tomlValue(value)}`);
}

interface Running {
  server: AppServerProcess;
  /** Threads loaded into this process. */
  loaded: Set<string>;
}

export interface AppServerThread {
  server: AppServerProcess;
  threadId: string;
  /** The thread was created now (`thread/start`). */
  created: boolean;
}

export class AppServerPool {
  private readonly running = new Map<string, Promise<Running>>();
  /** Processes started per provider (the first start included), for logs and tests. */
  readonly starts = new Map<string, number>();

  constructor(private readonly env: Readonly<Record<string, string | undefined>> = process.env) {}

  /** The provider's live process, started (again) when there is none. */
  private async process(providerId: string, settings: AppServerSettings): Promise<Running> {
    const current = this.running.get(providerId);
    if (current) {
      const running = await current.catch(() => null);
      if (running?.server.alive) return running;
    }
    const launch: AppServerLaunch = {
      command: settings.command,
      overrides: launchOverrides(settings),
      codexHome: settings.codexHome,
      env: this.env,
    };
    const started = AppServerProcess.start(launch).then((server) => ({ server, loaded: new Set<string>() }));
    this.running.set(providerId, started);
    this.starts.set(providerId, (this.starts.get(providerId) ?? 0) + 1);
    return started;
  }

  /** The thread, loaded in a live process: created when `threadId` is null, resumed when the process lacks it. */
  async thread(
    providerId: string,
    settings: AppServerSettings,
    options: { threadId: string | null; model: string; instructions?: string | null },
  ): Promise<AppServerThread> {
    const running = await this.process(providerId, settings);
    const { server, loaded } = running;
    if (options.threadId === null) {
      const started = await server.request<{ thread: { id: string } }>('thread/start', {
        model: options.model,
        cwd: settings.codexHome,
        approvalPolicy: 'never',
        sandbox: settings.sandbox,
        // The conversation's system prompt, as the thread's developer instructions (Codex keeps its own base ones).
        ...(options.instructions ? { developerInstructions: options.instructions } : {}),
      });
      loaded.add(started.thread.id);
      return { server, threadId: started.thread.id, created: true };
    }
    if (!loaded.has(options.threadId)) {
      await server.request('thread/resume', { threadId: options.threadId });
      loaded.add(options.threadId);
    }
    return { server, threadId: options.threadId, created: false };
  }

  /** The live process of a provider, if any (tests kill it to prove the restart). */
  async current(providerId: string): Promise<AppServerProcess | null> {
    const running = await this.running.get(providerId)?.catch(() => null);
    return running?.server.alive ? running.server : null;
  }

  async close(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => null))?.server.close()));
  }
}
