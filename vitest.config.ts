import { defineConfig } from 'vitest/config';

// Two cores: keep parallelism low. `unit` is pure and needs no services; `integration` shares one Temporal dev
// server and one PostgreSQL cluster, started (or connected to) once per run by the global setup.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/harness/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          // The main job as a user runs it (its own stack: embedded PGlite, its own Temporal dev server).
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
