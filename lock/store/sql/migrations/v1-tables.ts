/** Migration 1: the sequence, sessions, locks, audit. */
import type { Migration } from './migration.js';

export const v1: Migration = {
  version: 1,
  sql: `
    CREATE SEQUENCE holdfast_fencing_seq AS bigint START 1;

    CREATE TABLE holdfast_sessions (
      session_id        text PRIMARY KEY,
      owner             text NOT NULL,
      ttl_millis        integer NOT NULL,
      created_at        bigint NOT NULL,
      last_heartbeat_at bigint NOT NULL,
      expires_at        bigint NOT NULL
    );
    CREATE INDEX holdfast_sessions_expires_at ON holdfast_sessions (expires_at);

    -- COLLATE "C": keys sort bytewise, so prefix scans and cursors agree everywhere.
    CREATE TABLE holdfast_locks (
      key           text COLLATE "C" PRIMARY KEY,
      session_id    text NOT NULL,
      owner         text NOT NULL,
      fencing_token bigint NOT NULL,
      ttl_millis    integer NOT NULL,
      granted_at    bigint NOT NULL,
      expires_at    bigint NOT NULL
    );
    CREATE INDEX holdfast_locks_session_id ON holdfast_locks (session_id);
    CREATE INDEX holdfast_locks_expires_at ON holdfast_locks (expires_at);

    CREATE TABLE holdfast_audit (
      id            bigint PRIMARY KEY,
      at            bigint NOT NULL,
      actor         text NOT NULL,
      action        text NOT NULL,
      target        text NOT NULL,
      fencing_token bigint,
      reason        text NOT NULL,
      outcome       text NOT NULL,
      request_id    text NOT NULL,
      prev_hash     text NOT NULL,
      hash          text NOT NULL
    );

    -- One row: the chain head, locked FOR UPDATE by every append so ids are gapless and ordered.
    CREATE TABLE holdfast_audit_head (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      last_id   bigint NOT NULL,
      last_hash text NOT NULL
    );
    INSERT INTO holdfast_audit_head (last_id, last_hash) VALUES (0, repeat('0', 64));
  `,
};
