/** Migration 2: session tokens, the store clock, single acquires. */
import type { Migration } from './migration.js';

export const v2: Migration = {
  // v2: the session capability (only its SHA-256 is kept), the database clock, and
  // acquire as one function that draws its token after the row locks it depends on.
  version: 2,
  statements: [
    // Sessions opened before this migration have no token: they cannot act and simply lapse.
    `ALTER TABLE holdfast_sessions ADD COLUMN token_hash text`,
    // The store's clock: every liveness decision reads it, never a server's wall clock.
    `CREATE FUNCTION holdfast_now_ms() RETURNS bigint LANGUAGE sql VOLATILE
       AS $$ SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint $$`,
    `CREATE FUNCTION holdfast_try_acquire(p_key text, p_session text, p_token_hash text, p_ttl integer)
     RETURNS TABLE (r_kind text, r_key text, r_session_id text, r_owner text, r_fencing_token text,
                    r_ttl_millis integer, r_granted_at bigint, r_expires_at bigint)
     LANGUAGE plpgsql AS $$
     DECLARE
       s holdfast_sessions%ROWTYPE;
       l holdfast_locks%ROWTYPE;
       now_ms bigint;
       live boolean;
       inserted integer;
     BEGIN
       -- A share lock on the caller's session row: it cannot end while a grant to it is written.
       SELECT * INTO s FROM holdfast_sessions hs WHERE hs.session_id = p_session FOR SHARE;
       now_ms := holdfast_now_ms();
       IF s.session_id IS NULL OR s.expires_at <= now_ms THEN
         RETURN QUERY SELECT 'session_not_found'::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint;
         RETURN;
       END IF;
       IF s.token_hash IS DISTINCT FROM p_token_hash THEN
         RETURN QUERY SELECT 'unauthenticated'::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint;
         RETURN;
       END IF;
       FOR attempt IN 1..20 LOOP
         -- A plain read first: a contended poll takes no row lock.
         l := NULL;
         SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_key;
         IF l.key IS NULL THEN
           -- Absent: insert with a placeholder token. The insert may wait on another
           -- transaction's uncommitted insert or delete of this key; the token is drawn
           -- only once the row is ours.
           INSERT INTO holdfast_locks AS hl (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
           VALUES (p_key, p_session, s.owner, 0, p_ttl, now_ms, now_ms + p_ttl)
           ON CONFLICT (key) DO NOTHING;
           GET DIAGNOSTICS inserted = ROW_COUNT;
           IF inserted = 1 THEN
             now_ms := holdfast_now_ms();
             RETURN QUERY UPDATE holdfast_locks hl
               SET fencing_token = nextval('holdfast_fencing_seq'), granted_at = now_ms, expires_at = now_ms + p_ttl
               WHERE hl.key = p_key
               RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at, hl.expires_at;
             RETURN;
           END IF;
           CONTINUE;
         END IF;
         now_ms := holdfast_now_ms();
         live := l.expires_at > now_ms AND EXISTS (
           SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms);
         IF live THEN
           RETURN QUERY SELECT CASE WHEN l.session_id = p_session THEN 'existing' ELSE 'held' END,
             l.key::text, l.session_id, l.owner, l.fencing_token::text, l.ttl_millis, l.granted_at, l.expires_at;
           RETURN;
         END IF;
         -- Looks free (lapsed, or its session is gone): lock the row, then decide again.
         l := NULL;
         SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_key FOR UPDATE;
         IF l.key IS NULL THEN
           CONTINUE;
         END IF;
         now_ms := holdfast_now_ms();
         live := l.expires_at > now_ms AND EXISTS (
           SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms);
         IF live THEN
           RETURN QUERY SELECT CASE WHEN l.session_id = p_session THEN 'existing' ELSE 'held' END,
             l.key::text, l.session_id, l.owner, l.fencing_token::text, l.ttl_millis, l.granted_at, l.expires_at;
           RETURN;
         END IF;
         -- Takeover: the row lock is held, so the token drawn now is answered after any earlier one.
         RETURN QUERY UPDATE holdfast_locks hl
           SET session_id = p_session, owner = s.owner, fencing_token = nextval('holdfast_fencing_seq'),
               ttl_millis = p_ttl, granted_at = now_ms, expires_at = now_ms + p_ttl
           WHERE hl.key = p_key
           RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at, hl.expires_at;
         RETURN;
       END LOOP;
       RAISE EXCEPTION 'holdfast_try_acquire: key % changed hands 20 times during one attempt', p_key;
     END
     $$`,
  ],
};
