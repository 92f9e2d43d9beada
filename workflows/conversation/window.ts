// The conversation's model window in workflow code (SPEC §4.1, §4.3, §4.4): an unknown -900k id or a window below
// 64,000 tokens is refused with a non-retryable failure (a model switch's validator, the workflow's start).
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../../contracts/failures.js';
import { resolveUsableContextLength } from '../../engine/index.js';

/** SPEC §4.1 / §4.4 in workflow code: an unknown -900k id or a window below 64,000 is refused. */
export function resolveWindow(modelName: string, provider: string | null, explicit: number | null): number {
  try {
    return resolveUsableContextLength(modelName, provider, explicit);
  } catch (err) {
    throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.InvalidModel);
  }
}
