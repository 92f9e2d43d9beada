// Declarations of the archive-only plugin (index.js) for TypeScript hosts and tests; the host loads index.js by path.
import type { ChatMessage, ContextCompressorOptions, ContextEngine } from '../../../engine/index.js';

/** The pointer's first line. */
export const ARCHIVE_MARKER: string;
/** Where the kept head ends and the kept tail starts. */
export function keptRange(
  messages: readonly ChatMessage[],
  limits: { protectFirstN: number; protectLastN: number },
): { headEnd: number; tailStart: number };
/** The pointer's role between the messages before and after it. */
export function pointerRole(before: string | undefined, after: string | undefined): 'user' | 'assistant';
/** The factory SPEC §10.3 calls with the built-in engine's constructor arguments. */
export default function createArchiveOnlyEngine(options: ContextCompressorOptions): ContextEngine;
