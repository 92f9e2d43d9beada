// Ordered, never-edited migrations, listed statically so they also work from a bundle (no directory scan).
import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001_initial.js';

const MIGRATIONS: Record<string, Migration> = {
  '0001_initial': m0001,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
