/** Migration 5: the token that opened a session. */
import type { Migration } from './migration.js';

export const v5: Migration = {
  version: 5,
  // Expand only: a release that does not know the column leaves it NULL, as for sessions opened
  // without a client token.
  statements: [`ALTER TABLE holdfast_sessions ADD COLUMN opened_by text`],
};
