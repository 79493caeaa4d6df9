/**
 * Migration 13: a lone mutex attempt with no wait to record (the uncontended hot path): migration 2's one-request
 * function (no batch array work), with the grant's value, the key's mode and limit in the answer,
 * and a key whose row is an anchor decided by holdfast_admit_holder.
 */
export const ACQUIRE_ONE = `CREATE FUNCTION holdfast_acquire_one(p_key text, p_session text, p_token_hash text, p_ttl integer, p_value text)
     RETURNS TABLE (r_kind text, r_key text, r_session_id text, r_owner text, r_fencing_token text, r_ttl_millis integer,
                    r_granted_at bigint, r_expires_at bigint, r_value text, r_mode text, r_limit integer)
     LANGUAGE plpgsql AS $$
     DECLARE
       s holdfast_sessions%ROWTYPE;
       l holdfast_locks%ROWTYPE;
       a record;
       now_ms bigint;
       inserted integer;
     BEGIN
       SELECT * INTO s FROM holdfast_sessions hs WHERE hs.session_id = p_session FOR SHARE;
       now_ms := holdfast_now_ms();
       IF s.session_id IS NULL OR s.expires_at <= now_ms OR s.token_hash IS DISTINCT FROM p_token_hash THEN
         RETURN QUERY SELECT CASE WHEN s.session_id IS NULL OR s.expires_at <= now_ms THEN 'session_not_found' ELSE 'unauthenticated' END,
           NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint, NULL::text, NULL::text, NULL::integer;
         RETURN;
       END IF;
       FOR attempt IN 1..20 LOOP
         l := NULL;
         SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_key;
         IF l.key IS NULL THEN
           INSERT INTO holdfast_locks AS hl (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
           VALUES (p_key, p_session, s.owner, 0, p_ttl, now_ms, now_ms + p_ttl)
           ON CONFLICT (key) DO NOTHING;
           GET DIAGNOSTICS inserted = ROW_COUNT;
           CONTINUE WHEN inserted = 0;
           now_ms := holdfast_now_ms();
           RETURN QUERY UPDATE holdfast_locks hl
             SET fencing_token = nextval('holdfast_fencing_seq'), granted_at = now_ms, expires_at = now_ms + p_ttl, value = p_value
             WHERE hl.key = p_key
             RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at,
                       hl.expires_at, hl.value, 'exclusive'::text, 1;
           RETURN;
         END IF;
         IF l.mode IS NOT NULL THEN
           SELECT * INTO a FROM holdfast_admit_holder(p_key, p_session, s.owner, p_ttl, p_value, 'exclusive', 1, NULL, NULL, NULL, NULL);
           CONTINUE WHEN a.o_kind = 'retry';
           IF a.o_kind = 'granted' THEN
             RETURN QUERY UPDATE holdfast_locks hl SET fencing_token = nextval('holdfast_fencing_seq'), value = p_value WHERE hl.key = p_key
               RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at,
                         hl.expires_at, hl.value, 'exclusive'::text, 1;
             RETURN;
           END IF;
           RETURN QUERY SELECT a.o_kind, (a.o_holder).key::text, (a.o_holder).session_id, (a.o_holder).owner,
             (a.o_holder).fencing_token::text, (a.o_holder).ttl_millis, (a.o_holder).granted_at, (a.o_holder).expires_at,
             (a.o_holder).value, a.o_mode, a.o_limit;
           RETURN;
         END IF;
         now_ms := holdfast_now_ms();
         IF l.expires_at > now_ms AND EXISTS (
              SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
           RETURN QUERY SELECT CASE WHEN l.session_id = p_session THEN 'existing' ELSE 'held' END, l.key::text, l.session_id, l.owner,
             l.fencing_token::text, l.ttl_millis, l.granted_at, l.expires_at, l.value, 'exclusive'::text, 1;
           RETURN;
         END IF;
         l := NULL;
         SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_key FOR UPDATE;
         CONTINUE WHEN l.key IS NULL OR l.mode IS NOT NULL;
         now_ms := holdfast_now_ms();
         IF l.expires_at > now_ms AND EXISTS (
              SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
           RETURN QUERY SELECT CASE WHEN l.session_id = p_session THEN 'existing' ELSE 'held' END, l.key::text, l.session_id, l.owner,
             l.fencing_token::text, l.ttl_millis, l.granted_at, l.expires_at, l.value, 'exclusive'::text, 1;
           RETURN;
         END IF;
         -- Takeover, the row lock held: the token drawn now is answered after any earlier one. The new
         -- token clears the previous holder's value (migration 12's trigger); this grant's own is set after it.
         IF p_value IS NULL THEN
           RETURN QUERY UPDATE holdfast_locks hl
             SET session_id = p_session, owner = s.owner, fencing_token = nextval('holdfast_fencing_seq'),
                 ttl_millis = p_ttl, granted_at = now_ms, expires_at = now_ms + p_ttl
             WHERE hl.key = p_key
             RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at,
                       hl.expires_at, hl.value, 'exclusive'::text, 1;
           RETURN;
         END IF;
         UPDATE holdfast_locks hl
           SET session_id = p_session, owner = s.owner, fencing_token = nextval('holdfast_fencing_seq'),
               ttl_millis = p_ttl, granted_at = now_ms, expires_at = now_ms + p_ttl
           WHERE hl.key = p_key;
         RETURN QUERY UPDATE holdfast_locks hl SET value = p_value WHERE hl.key = p_key
           RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at,
                     hl.expires_at, hl.value, 'exclusive'::text, 1;
         RETURN;
       END LOOP;
       RETURN QUERY SELECT 'retry'::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint,
         NULL::text, NULL::text, NULL::integer;
     END
     $$`;
