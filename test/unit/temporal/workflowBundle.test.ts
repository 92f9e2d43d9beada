// workers/runtime/workflowBundle.ts: the worker processes' workflow bundle, built in a worker thread.
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type Logger, type LogLevel } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../../../workers/runtime/createWorker.js';
import { bundleWorkflowsInThread } from '../../../workers/runtime/workflowBundle.js';

function recordingLogger(): { logger: Logger; lines: Array<{ level: LogLevel; message: string }> } {
  const lines: Array<{ level: LogLevel; message: string }> = [];
  const at = (level: LogLevel) => (message: string) => lines.push({ level, message });
  const logger: Logger = {
    log: (level, message) => lines.push({ level, message }),
    trace: at('TRACE'),
    debug: at('DEBUG'),
    info: at('INFO'),
    warn: at('WARN'),
    error: at('ERROR'),
  };
  return { logger, lines };
}

describe('bundleWorkflowsInThread', () => {
  it('builds the bundle Worker.create would build in the process, and forwards the bundler log', async () => {
    const threaded = recordingLogger();
    const { code } = await bundleWorkflowsInThread(WORKFLOWS_PATH, threaded.logger);
    const inProcess = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: recordingLogger().logger });
    expect(code).toContain('conversationWorkflow');
    expect(code).toBe(inProcess.code);
    expect(threaded.lines).toContainEqual({ level: 'INFO', message: 'Workflow bundle created' });
    expect(threaded.lines.filter((line) => line.level === 'WARN' || line.level === 'ERROR')).toEqual([]);
  });

  it('rejects with the bundler error when the workflows cannot be bundled', async () => {
    const missing = fileURLToPath(new URL('./no-such-workflows.ts', import.meta.url));
    const { logger } = recordingLogger();
    await expect(bundleWorkflowsInThread(missing, logger)).rejects.toThrow(/no-such-workflows/);
  });
});
