// Builds an OpenAI-shaped agent transcript: assistant messages with `tool_calls` (JSON-string arguments), followed
// by one `tool` message per call (`tool_call_id`, `name`), with outputs computed when the call is made.
import type { ChatMessage } from '../../../engine/index.js';
import type { Rng } from './random.js';
import type { VirtualRepo } from './repo.js';
import { type RunEnv, vitestOutput } from './testRunner.js';

export interface ToolSpec {
  name: string;
  args: Record<string, unknown>;
  /** Computed when the call runs (edits change the repository then). */
  output: () => string;
}

export class AgentSession {
  readonly messages: ChatMessage[] = [];
  /** Minutes since the session started (09:12), advanced by each step. */
  private minutes = 0;
  lastTestsPassed = false;

  constructor(
    readonly rng: Rng,
    readonly repo: VirtualRepo,
  ) {}

  clock(): string {
    this.minutes += this.rng.int(0, 2);
    const total = 9 * 60 + 12 + this.minutes;
    const s = this.rng.int(0, 59);
    return `${String(Math.floor(total / 60) % 24).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  }

  system(text: string): void {
    this.messages.push({ role: 'system', content: text });
  }

  user(text: string): void {
    this.minutes += this.rng.int(2, 9);
    this.messages.push({ role: 'user', content: text });
  }

  say(text: string): void {
    this.messages.push({ role: 'assistant', content: text });
  }

  /** One assistant message calling the tools (in parallel when more than one), then their results in order. */
  call(text: string | null, ...tools: ToolSpec[]): string[] {
    const ids = tools.map(() => this.rng.callId());
    this.messages.push({
      role: 'assistant',
      content: text,
      tool_calls: tools.map((t, i) => ({
        id: ids[i] as string,
        type: 'function' as const,
        function: { name: t.name, arguments: JSON.stringify(t.args) },
      })),
    });
    const outputs: string[] = [];
    tools.forEach((t, i) => {
      const output = t.output();
      outputs.push(output);
      this.messages.push({ role: 'tool', tool_call_id: ids[i] as string, name: t.name, content: output });
    });
    return outputs;
  }

  // ---- tools ----

  read(path: string, range?: [number, number]): ToolSpec {
    return {
      name: 'read_file',
      args: range ? { path, start_line: range[0], end_line: range[1] } : { path },
      output: () => this.repo.numbered(path, range?.[0], range?.[1]),
    };
  }

  edit(path: string, oldText: string, newText: string): ToolSpec {
    return {
      name: 'edit_file',
      args: { path, old_string: oldText, new_string: newText },
      output: () => {
        const snippet = this.repo.edit(path, oldText, newText);
        return `The file ${path} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${snippet}`;
      },
    };
  }

  write(path: string, content: string): ToolSpec {
    return {
      name: 'write_file',
      args: { path, content },
      output: () => {
        const existed = this.repo.has(path);
        this.repo.write(path, content);
        return existed
          ? `File ${path} overwritten (${content.split('\n').length} lines).`
          : `File created successfully at: ${path}`;
      },
    };
  }

  run(command: string, output: string | (() => string)): ToolSpec {
    return {
      name: 'run_command',
      args: { command },
      output: () => {
        const text = typeof output === 'string' ? output : output();
        return text;
      },
    };
  }

  /** `npm test` / `npx vitest run <filters>` in the given environment. */
  test(filters: string[] = [], env: RunEnv = { tz: 'UTC', node: 20 }, prefix = ''): ToolSpec {
    const verbose = this.rng.chance(0.35);
    const viaNpm = filters.length === 0 && !prefix && !verbose;
    const command = viaNpm
      ? 'npm test'
      : `${prefix}npx vitest run${verbose ? ' --reporter=verbose' : ''}${filters.length ? ` ${filters.join(' ')}` : ''}`;
    return this.run(command, () => {
      const { output, passed } = vitestOutput(this.repo, env, this.rng, {
        ...(filters.length ? { filter: filters } : {}),
        viaNpm,
        verbose,
        clock: this.clock(),
      });
      this.lastTestsPassed = passed;
      return passed ? output : `${output}\n\n[exit code 1]`;
    });
  }

  grep(pattern: string, dirs: string[] = ['src', 'test', 'scripts']): ToolSpec {
    return this.run(`grep -rn "${pattern}" ${dirs.join(' ')}`, () => {
      const hits = this.repo.grep(
        basicRegExp(pattern),
        dirs.map((d) => `${d}/`),
      );
      return hits || '[exit code 1]';
    });
  }

  gitDiff(paths?: string[]): ToolSpec {
    return this.run(`git diff${paths ? ` -- ${paths.join(' ')}` : ''}`, () => this.repo.diff(paths) || '');
  }
}

/** grep's basic regular expressions: `\\(`, `\\)` and `\\|` are operators, bare parentheses are literal. */
function basicRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    const next = pattern[i + 1];
    if (c === '\\' && next !== undefined) {
      out += next === '(' || next === ')' || next === '|' ? next : `\\${next}`;
      i++;
    } else if (c === '(' || c === ')' || c === '|') {
      out += `\\${c}`;
    } else {
      out += c;
    }
  }
  return new RegExp(out);
}
