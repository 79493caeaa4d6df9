/** Migration 11: acquire or wait, in one statement. */
import type { Migration } from './migration.js';

export const v11: Migration = {
  // v11: a contended acquire records its wait in the try that finds the key held (issue 22):
  // one statement where try, record, try again took three. holdfast_try_acquire_batch (v4) with
  // per-request wait records: a request with a wait id that finds the key held by another live
  // session records its wait under the lock row's lock, so no release ends the grant between the
  // try and the record. Expand only: v4's function stays for requests with no wait to record and
  // for releases that do not know this one.
  version: 11,
  statements: [
    `CREATE FUNCTION holdfast_acquire_or_wait_batch(p_keys text[], p_sessions text[], p_token_hashes text[], p_ttls integer[],
                                                    p_wait_ids text[], p_instance_ids text[], p_wait_ttls integer[], p_wait_budgets bigint[])
     RETURNS TABLE (r_index integer, r_kind text, r_key text, r_session_id text, r_owner text, r_fencing_token text,
                    r_ttl_millis integer, r_granted_at bigint, r_expires_at bigint, r_wait_recorded boolean)
     LANGUAGE plpgsql AS $$
     DECLARE
       n integer := coalesce(array_length(p_keys, 1), 0);
       kinds text[];
       owners text[];
       holders holdfast_locks[] := array_fill(NULL::holdfast_locks, ARRAY[n]);
       recorded boolean[] := array_fill(false, ARRAY[n]);
       l holdfast_locks%ROWTYPE;
       i integer;
       now_ms bigint;
       inserted integer;
       done boolean;
     BEGIN
       -- Session rows first, by id (the canonical order), share-locked: none can end while
       -- a grant to it is written. Then one read decides every request's session.
       PERFORM 1 FROM holdfast_sessions hs WHERE hs.session_id = ANY(p_sessions) ORDER BY hs.session_id FOR SHARE;
       now_ms := holdfast_now_ms();
       SELECT array_agg(CASE WHEN hs.session_id IS NULL OR hs.expires_at <= now_ms THEN 'session_not_found'
                             WHEN hs.token_hash IS DISTINCT FROM u.h THEN 'unauthenticated' END ORDER BY u.ord),
              array_agg(hs.owner ORDER BY u.ord)
         INTO kinds, owners
         FROM unnest(p_sessions, p_token_hashes) WITH ORDINALITY AS u(sid, h, ord)
         LEFT JOIN holdfast_sessions hs ON hs.session_id = u.sid;

       -- Lock rows in key order (COLLATE "C", as every multi-row writer sorts them).
       FOR i IN SELECT u.ord FROM unnest(p_keys) WITH ORDINALITY AS u(k, ord) ORDER BY u.k COLLATE "C" LOOP
         CONTINUE WHEN kinds[i] IS NOT NULL;
         done := false;
         FOR attempt IN 1..20 LOOP
           l := NULL;
           SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_keys[i];
           IF l.key IS NULL THEN
             -- Placeholder token 0: the real one is drawn below, after every row lock is held.
             now_ms := holdfast_now_ms();
             INSERT INTO holdfast_locks AS hl (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
             VALUES (p_keys[i], p_sessions[i], owners[i], 0, p_ttls[i], now_ms, now_ms + p_ttls[i])
             ON CONFLICT (key) DO NOTHING;
             GET DIAGNOSTICS inserted = ROW_COUNT;
             IF inserted = 1 THEN kinds[i] := 'granted'; done := true; EXIT; END IF;
             CONTINUE;
           END IF;
           now_ms := holdfast_now_ms();
           -- Held with a wait to record: decided under the row lock below, so no release can end
           -- the grant between this read and the wait's record (it would announce nothing).
           IF l.expires_at > now_ms AND (p_wait_ids[i] IS NULL OR l.session_id = p_sessions[i]) AND EXISTS (
                SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
             kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
             holders[i] := l; done := true; EXIT;
           END IF;
           -- Looks free (lapsed, or its session is gone), or held with a wait to record: lock the row, then decide again.
           l := NULL;
           SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_keys[i] FOR UPDATE;
           CONTINUE WHEN l.key IS NULL;
           now_ms := holdfast_now_ms();
           IF l.expires_at > now_ms AND EXISTS (
                SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
             kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
             holders[i] := l; done := true;
             -- The row lock is held until commit: a release of this grant waits for it, then sees the
             -- wait (hands it the key, or announces the release to its instance). Recorded as
             -- FleetWaitState.beginWait records: only for a live instance, once per wait id. The
             -- instance row is key-share locked by the check itself: an instance ending meanwhile
             -- is waited for and then found gone (nothing recorded), never a foreign-key error
             -- that would fail the whole batch.
             IF kinds[i] = 'held' AND p_wait_ids[i] IS NOT NULL THEN
               INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at, ttl_millis, deadline_at)
                 SELECT p_wait_ids[i], p_sessions[i], p_keys[i], p_instance_ids[i], holdfast_now_ms(), p_wait_ttls[i],
                        holdfast_now_ms() + p_wait_budgets[i]
                 WHERE EXISTS (SELECT 1 FROM holdfast_instances hi WHERE hi.instance_id = p_instance_ids[i] FOR KEY SHARE)
                 ON CONFLICT (wait_id) DO NOTHING;
               GET DIAGNOSTICS inserted = ROW_COUNT;
               recorded[i] := inserted = 1;
             END IF;
             EXIT;
           END IF;
           -- Takeover, placeholder token as above; the new expiry counts from now (never later than the token).
           UPDATE holdfast_locks hl
             SET session_id = p_sessions[i], owner = owners[i], fencing_token = 0,
                 ttl_millis = p_ttls[i], granted_at = now_ms, expires_at = now_ms + p_ttls[i]
             WHERE hl.key = p_keys[i];
           kinds[i] := 'granted'; done := true; EXIT;
         END LOOP;
         -- A key that changed hands 20 times during one attempt: that request alone is retried by the caller.
         IF NOT done THEN kinds[i] := 'retry'; END IF;
       END LOOP;

       -- Tokens in request order, every row lock of the batch now held. Only the token
       -- changes (an unindexed column: a HOT update).
       FOR i IN 1..n LOOP
         IF kinds[i] = 'granted' THEN
           RETURN QUERY UPDATE holdfast_locks hl SET fencing_token = nextval('holdfast_fencing_seq')
             WHERE hl.key = p_keys[i]
             RETURNING i, 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text,
                       hl.ttl_millis, hl.granted_at, hl.expires_at, false;
         ELSIF kinds[i] IN ('held', 'existing') THEN
           RETURN QUERY SELECT i, kinds[i], (holders[i]).key::text, (holders[i]).session_id, (holders[i]).owner,
             (holders[i]).fencing_token::text, (holders[i]).ttl_millis, (holders[i]).granted_at, (holders[i]).expires_at, recorded[i];
         ELSE
           RETURN QUERY SELECT i, kinds[i], NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint, false;
         END IF;
       END LOOP;
     END
     $$`,
  ],
};
