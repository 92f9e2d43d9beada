// Where context engine plugins are looked for unless DURABLE_CONTEXT_PLUGIN_DIR says otherwise (SPEC §10.3): the
// checkout's `plugins/context_engine/`. Its own module so that the environment's default and the loader share it.
import { fileURLToPath } from 'node:url';

export const DEFAULT_PLUGIN_DIR = fileURLToPath(new URL('../../plugins/context_engine', import.meta.url));
