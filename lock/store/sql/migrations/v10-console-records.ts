/**
 * Migration 10: console records (issue 25, console replicas): sign-in codes, console sessions and
 * wrong-secret counts the console keeps in the store (lock/store/console-records.ts). A new table
 * only: a release that does not know it never reads it.
 */
import type { Migration } from './migration.js';

export const v10: Migration = {
  version: 10,
  sql: `
    CREATE TABLE holdfast_console_records (
      kind       text COLLATE "C" NOT NULL,
      id         text COLLATE "C" NOT NULL,
      value      text NOT NULL,
      expires_at bigint NOT NULL,
      PRIMARY KEY (kind, id)
    );
    CREATE INDEX holdfast_console_records_expires_at ON holdfast_console_records (expires_at)
  `,
};
