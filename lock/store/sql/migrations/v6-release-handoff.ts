/** Migration 6: FIFO handoff in the release. */
import type { Migration } from './migration.js';

export const v6: Migration = {
  // v6: FIFO handoff (issue 22). A release hands the key to the oldest recorded wait that can
  // take it, in the releasing statement: the lock row changes holder (an UPDATE, so the
  // release trigger announces nothing for it) and the wait is marked with its grant's token.
  // Expand only: waits recorded by a release that does not know these columns have no TTL and
  // are never handed a key; they wake and try as before.
  version: 6,
  statements: [
    `ALTER TABLE holdfast_waiters ADD COLUMN ttl_millis integer, ADD COLUMN deadline_at bigint, ADD COLUMN granted_token bigint`,
    `CREATE INDEX holdfast_waiters_key_order ON holdfast_waiters (key, started_at, wait_id)`,
    `CREATE FUNCTION holdfast_release_batch(p_keys text[], p_tokens bigint[], p_sessions text[], p_token_hashes text[])
     RETURNS TABLE (r_index integer, r_key text, r_session_id text, r_owner text, r_fencing_token text,
                    r_ttl_millis integer, r_granted_at bigint, r_expires_at bigint, r_ended_at bigint,
                    h_wait_id text, h_session_id text, h_owner text, h_fencing_token text,
                    h_ttl_millis integer, h_granted_at bigint, h_expires_at bigint)
     LANGUAGE plpgsql AS $$
     DECLARE
       n integer := coalesce(array_length(p_keys, 1), 0);
       ended holdfast_locks[] := array_fill(NULL::holdfast_locks, ARRAY[n]);
       heirs holdfast_waiters[] := array_fill(NULL::holdfast_waiters, ARRAY[n]);
       heir_owners text[] := array_fill(NULL::text, ARRAY[n]);
       decided text[] := ARRAY[]::text[];
       l holdfast_locks%ROWTYPE;
       w holdfast_waiters%ROWTYPE;
       g holdfast_locks%ROWTYPE;
       heir_owner text;
       now_ms bigint;
       i integer;
     BEGIN
       -- Pass 1, keys in order (as every multi-row writer): lock each released row, and
       -- choose its heir: the oldest recorded wait still in its budget whose session and
       -- instance are live. Waits and heir sessions are taken with SKIP LOCKED: a release
       -- never waits behind a session end or a wait's end (it picks the next wait instead).
       -- A key released twice in one batch is decided for the first asking (by ordinal).
       FOR i IN SELECT u.ord FROM unnest(p_keys) WITH ORDINALITY AS u(k, ord) ORDER BY u.k COLLATE "C", u.ord LOOP
         CONTINUE WHEN p_keys[i] = ANY(decided);
         l := NULL;
         SELECT hl.* INTO l FROM holdfast_locks hl
           WHERE hl.key = p_keys[i] AND hl.fencing_token = p_tokens[i] AND hl.session_id = p_sessions[i]
           FOR UPDATE;
         CONTINUE WHEN l.key IS NULL;
         now_ms := holdfast_now_ms();
         CONTINUE WHEN l.expires_at <= now_ms OR NOT EXISTS (
           SELECT 1 FROM holdfast_sessions hs
           WHERE hs.session_id = p_sessions[i] AND hs.token_hash = p_token_hashes[i] AND hs.expires_at > now_ms);
         decided := decided || p_keys[i];
         ended[i] := l;
         FOR w IN SELECT hw.* FROM holdfast_waiters hw
             WHERE hw.key = p_keys[i] AND hw.granted_token IS NULL AND hw.victim_cycle IS NULL
               AND hw.ttl_millis IS NOT NULL AND hw.deadline_at > now_ms AND hw.session_id <> p_sessions[i]
               AND EXISTS (SELECT 1 FROM holdfast_instances hi WHERE hi.instance_id = hw.instance_id AND hi.expires_at > now_ms)
             ORDER BY hw.started_at, hw.wait_id
             LIMIT 16
             FOR UPDATE OF hw SKIP LOCKED LOOP
           heir_owner := NULL;
           SELECT hs.owner INTO heir_owner FROM holdfast_sessions hs
             WHERE hs.session_id = w.session_id AND hs.expires_at > now_ms FOR SHARE SKIP LOCKED;
           CONTINUE WHEN heir_owner IS NULL;
           heirs[i] := w;
           heir_owners[i] := heir_owner;
           EXIT;
         END LOOP;
       END LOOP;

       -- Pass 2, in request order, every row lock held: tokens drawn only now (SPI rule 1).
       now_ms := holdfast_now_ms();
       FOR i IN 1..n LOOP
         CONTINUE WHEN (ended[i]).key IS NULL;
         IF (heirs[i]).wait_id IS NULL THEN
           DELETE FROM holdfast_locks hl WHERE hl.key = p_keys[i];
           RETURN QUERY SELECT i, (ended[i]).key::text, (ended[i]).session_id, (ended[i]).owner, (ended[i]).fencing_token::text,
             (ended[i]).ttl_millis, (ended[i]).granted_at, (ended[i]).expires_at, now_ms,
             NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint;
         ELSE
           UPDATE holdfast_locks hl
             SET session_id = (heirs[i]).session_id, owner = heir_owners[i], fencing_token = nextval('holdfast_fencing_seq'),
                 ttl_millis = (heirs[i]).ttl_millis, granted_at = now_ms, expires_at = now_ms + (heirs[i]).ttl_millis
             WHERE hl.key = p_keys[i]
             RETURNING hl.* INTO g;
           UPDATE holdfast_waiters hw SET granted_token = g.fencing_token WHERE hw.wait_id = (heirs[i]).wait_id;
           -- Delivered after commit to every instance: the one parking the wait answers it at once.
           PERFORM pg_notify('holdfast_released', chr(1) || json_build_object(
             'waitId', (heirs[i]).wait_id, 'key', g.key, 'sessionId', g.session_id, 'owner', g.owner,
             'fencingToken', g.fencing_token::text, 'ttlMillis', g.ttl_millis, 'grantedAt', g.granted_at,
             'expiresAt', g.expires_at)::text);
           RETURN QUERY SELECT i, (ended[i]).key::text, (ended[i]).session_id, (ended[i]).owner, (ended[i]).fencing_token::text,
             (ended[i]).ttl_millis, (ended[i]).granted_at, (ended[i]).expires_at, now_ms,
             (heirs[i]).wait_id, g.session_id, g.owner, g.fencing_token::text, g.ttl_millis, g.granted_at, g.expires_at;
         END IF;
       END LOOP;
     END
     $$`,
  ],
};
