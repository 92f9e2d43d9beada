// Global setup of the integration project: PostgreSQL and the Temporal dev server, once per run.
// - PostgreSQL: DATABASE_URL when set, else infra/postgres/ensure.sh (starts the local cluster, creates role + db).
// - Temporal: TEMPORAL_ADDRESS when set (search attributes are registered if missing), else a dev server started
//   here through the project's launcher and stopped in teardown.
import type { TestProject } from 'vitest/node';
import './provided.js';
import { resolveDatabaseUrl } from '../../../infra/postgres/locate.js';
import { type DevServer, startDevServer } from '../../../infra/temporal/devServer.js';
import { ensureSearchAttributes } from '../../../infra/temporal/searchAttributes.js';
import { SEARCH_ATTRIBUTES } from '../../../workflows/searchAttributes.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const databaseUrl = await resolveDatabaseUrl();
  let server: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  if (address) {
    await ensureSearchAttributes({ address, tls: false }, namespace, SEARCH_ATTRIBUTES);
  } else {
    server = await startDevServer({ searchAttributes: SEARCH_ATTRIBUTES, uiPort: false, namespace });
    address = server.address;
  }
  project.provide('databaseUrl', databaseUrl);
  project.provide('temporalAddress', address);
  project.provide('temporalNamespace', namespace);
  return async () => {
    await server?.stop();
  };
}
