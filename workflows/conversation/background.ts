// The automatic compaction of a conversation that runs in the background (SPEC §19 `background`, DESIGN.md §3): at
// most one at a time; started by the in-loop check, its outcome applied by the main loop as soon as the child has
// finished, or waited for by what must block (hygiene above 85 %, a manual compaction, continue-as-new).
import { condition, patched } from '@temporalio/workflow';
import type { CompactionOutcome, CompactionTrigger } from '../../contracts/compaction.js';
import type { BackgroundCompaction, CompactionResult } from '../../contracts/conversation.js';
import { type CompactingConversation, launchCompaction, settleCompaction, startCompaction } from './compact.js';

/** Patch id: a background start no longer waits for ChildWorkflowExecutionStarted before the loop goes on. */
const UNAWAITED_START_PATCH = 'background-start-unawaited';

export class BackgroundCompactions {
  private running: { info: BackgroundCompaction; outcome: CompactionOutcome | null } | null = null;

  /**
   * `beforeSettle`: runs before a finished compaction's outcome is applied (the conversation applies the quiet
   * batches committed while it ran, ConversationEntity).
   */
  constructor(
    private readonly conversation: CompactingConversation,
    private readonly beforeSettle: () => Promise<void>,
  ) {}

  /** The running compaction, for the status; null when none runs. */
  get info(): BackgroundCompaction | null {
    return this.running ? { ...this.running.info } : null;
  }

  get active(): boolean {
    return this.running !== null;
  }

  /** True when the child has finished and its outcome waits to be applied. */
  get finished(): boolean {
    return this.running?.outcome != null;
  }

  /**
   * Starts the child: the conversation keeps accepting messages and running turns; the commit keeps everything
   * appended since, in order (infra/db/compactionCommit). Returns without waiting for the server to confirm the
   * start (histories recorded before the patch waited for it).
   */
  async start(trigger: Exclude<CompactionTrigger, 'hygiene' | 'manual'>): Promise<void> {
    const started = patched(UNAWAITED_START_PATCH)
      ? launchCompaction(this.conversation, trigger)
      : await startCompaction(this.conversation, trigger);
    // SPEC §7.6: after an automatic attempt the next request goes out as is; at most one between two model calls.
    this.conversation.state.autoSinceModelCall = true;
    const running = {
      info: {
        compactionId: started.input.compactionId,
        seq: started.input.seq,
        trigger,
        startedAt: new Date(Date.now()).toISOString(),
      },
      outcome: null as CompactionOutcome | null,
    };
    this.running = running;
    void started.outcome.then((outcome) => {
      running.outcome = outcome;
    });
  }

  /** Applies the finished compaction's outcome (after `beforeSettle`); null when none has finished. */
  async settle(): Promise<CompactionResult | null> {
    const running = this.running;
    const outcome = running?.outcome;
    if (!running || !outcome) return null;
    await this.beforeSettle();
    this.running = null;
    return settleCompaction(this.conversation, running.info, outcome, { background: true });
  }

  /** Waits for the running compaction, if any, and applies its outcome. */
  async wait(): Promise<CompactionResult | null> {
    if (!this.running) return null;
    await condition(() => this.finished);
    return this.settle();
  }
}
