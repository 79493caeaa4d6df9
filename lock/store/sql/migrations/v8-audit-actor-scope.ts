/** Migration 8: the scope of the token behind an audited action (issue 26). */
import type { Migration } from './migration.js';

export const v8: Migration = {
  version: 8,
  // Expand only: a release that does not know the column appends entries without it (NULL), as for
  // an unscoped actor, and their hashes do not include it.
  statements: [`ALTER TABLE holdfast_audit ADD COLUMN actor_scope text[]`],
};
