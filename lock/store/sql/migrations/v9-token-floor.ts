/**
 * Migration 9: where the store's data was last known to live, and the last token floor
 * (issue 25, restores). One row, claimed on the first start that knows it (token-floor.ts).
 * A restored or copied database carries the row of the store it came from: its `identity`
 * then differs from where it lives, and writes are refused until `holdfast tokens advance`.
 * Expand only: a release that does not know the table never reads it.
 */
import type { Migration } from './migration.js';

export const v9: Migration = {
  version: 9,
  sql: `
    CREATE TABLE holdfast_token_floor (
      singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      identity    text NOT NULL,
      advanced_to bigint,
      advanced_at bigint NOT NULL
    )
  `,
};
