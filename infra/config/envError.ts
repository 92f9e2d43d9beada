// The error of an invalid environment (infra/config/env.ts), apart from the module that parses `process.env` when it
// is loaded: code that only throws or checks it (infra/temporal/connectionOptions.ts, reached from the CLI before the
// CLI has loaded the environment) must not parse the environment as a side effect of its import.
import type { EnvName } from './env.js';

/** One problem of an environment: the variables it names (one, or the two that contradict each other). */
export interface EnvProblem {
  names: readonly EnvName[];
  message: string;
}

/** Every invalid variable of an environment, one line each. */
export class EnvError extends Error {
  readonly variables: readonly EnvName[];
  constructor(problems: readonly EnvProblem[]) {
    super(problems.map((problem) => problem.message).join('\n'));
    this.name = 'EnvError';
    this.variables = problems.flatMap((problem) => problem.names);
  }
}
