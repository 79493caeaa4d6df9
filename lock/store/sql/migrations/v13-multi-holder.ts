/**
 * Migration 13 (issue 23, slice 2): keys that admit several holders (shared mode, semaphores).
 *
 * The model: holdfast_locks stays one row per key, and a mutex key keeps its row exactly as
 * before (the hot path reads and writes nothing new). A multi-holder key's row is an anchor
 * (`mode` set, `holder_limit` its limit; session '', token 0 and an expiry that never comes, so
 * no reader counts it as a grant and no sweep deletes it), and each of its grants is a row of
 * holdfast_holds. Every admission is decided under the key's holdfast_locks row lock, so a mutex
 * attempt and a shared or semaphore attempt on one key serialize.
 *
 * Expand only: new columns (NULL on every row written before), a new table, new functions
 * (holdfast_acquire_holders for batches, holdfast_acquire_one for a lone mutex attempt, both called by
 * this release only). The previous release's acquire functions keep their signatures and answers and
 * are replaced by anchor-aware copies (ANCHOR_AWARE_*), so its instances, mid-roll, never take over a
 * key whose holds are live; its release, renew and reads find no grant in an anchor (session '').
 */
import type { Migration } from './migration.js';
import { FENCING_TOKEN_MAX } from '../../../../contract/wire-rules.js';
import { v11 } from './v11-acquire-or-wait.js';
import { v4 } from './v4-acquire-batch.js';
import { ANCHOR_AWARE_BATCH, ANCHOR_AWARE_SINGLE } from './v13-previous-release.js';
import { ACQUIRE_ONE } from './v13-acquire-one.js';

/** The anchor row's expiry: never reached, so neither this release's sweep nor an older one deletes it by age. */
const ANCHOR_EXPIRES_AT = String(FENCING_TOKEN_MAX);

/** A hold is live while its TTL runs and its session is live (store clock), like a lock row. */
const LIVE_HOLD = (h: string, now: string) =>
  `${h}.expires_at > ${now} AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = ${h}.session_id AND hs.expires_at > ${now})`;

export const v13: Migration = {
  version: 13,
  statements: [
    // NULL mode: a mutex row (every row written before this migration, and every mutex grant after it).
    `ALTER TABLE holdfast_locks ADD COLUMN mode text, ADD COLUMN holder_limit integer`,
    // NULL: exclusive. A shared wait does not keep new shared grants out (writer preference).
    `ALTER TABLE holdfast_waiters ADD COLUMN mode text`,
    // One row per grant of a multi-holder key; a session holds at most one grant per key. Columns in
    // the order of the answers the acquire function builds from it.
    `CREATE TABLE holdfast_holds (
       key           text COLLATE "C" NOT NULL,
       session_id    text NOT NULL,
       owner         text NOT NULL,
       fencing_token bigint NOT NULL,
       ttl_millis    integer NOT NULL,
       granted_at    bigint NOT NULL,
       expires_at    bigint NOT NULL,
       value         text,
       PRIMARY KEY (key, session_id)
     )`,
    `CREATE INDEX holdfast_holds_session_id ON holdfast_holds (session_id)`,
    `CREATE INDEX holdfast_holds_expires_at ON holdfast_holds (expires_at)`,
    `CREATE INDEX holdfast_holds_key_token ON holdfast_holds (key, fencing_token)`,
    // Every end of a hold (release, sweep, revoke, session end) announces it as a lock row's end
    // does (migrations 3 and 12): the release feed for keys some wait is recorded on, the holders
    // channel for watched keys. A statement trigger on this table only: the mutex path has none new.
    `CREATE TRIGGER holdfast_holds_released AFTER DELETE ON holdfast_holds
       REFERENCING OLD TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION holdfast_notify_released()`,
    // The admission of one attempt on a key that admits several holders, or of a mutex attempt that
    // finds such a key (spi.ts "Multi-holder keys"). Takes the key's row lock first; writes a new
    // grant with placeholder token 0 (the caller draws tokens once every row lock of its batch is
    // held). o_kind: granted | existing | held | limit_mismatch; o_hold says a granted attempt is a
    // hold (else the key's row is now a mutex grant); o_holder is the grant answered for the others.
    `CREATE FUNCTION holdfast_admit_holder(p_key text, p_session text, p_owner text, p_ttl integer, p_value text,
                                           p_mode text, p_limit integer, p_wait_id text, p_instance_id text,
                                           p_wait_ttl integer, p_wait_budget bigint,
                                           OUT o_kind text, OUT o_hold boolean, OUT o_holder holdfast_holds,
                                           OUT o_mode text, OUT o_limit integer, OUT o_recorded boolean)
     LANGUAGE plpgsql AS $$
     DECLARE
       l holdfast_locks%ROWTYPE;
       own holdfast_holds%ROWTYPE;
       lowest holdfast_holds%ROWTYPE;
       live_count integer;
       now_ms bigint;
       inserted integer;
       mutex boolean := p_mode = 'exclusive' AND p_limit = 1;
       admit boolean;
     BEGIN
       o_hold := false;
       o_recorded := false;
       FOR attempt IN 1..20 LOOP
         l := NULL;
         SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_key FOR UPDATE;
         now_ms := holdfast_now_ms();
         IF l.key IS NULL THEN
           IF mutex THEN
             INSERT INTO holdfast_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
             VALUES (p_key, p_session, p_owner, 0, p_ttl, now_ms, now_ms + p_ttl) ON CONFLICT (key) DO NOTHING;
           ELSE
             INSERT INTO holdfast_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at, mode, holder_limit)
             VALUES (p_key, '', '', 0, 0, now_ms, ${ANCHOR_EXPIRES_AT}, p_mode, p_limit) ON CONFLICT (key) DO NOTHING;
           END IF;
           GET DIAGNOSTICS inserted = ROW_COUNT;
           -- Another attempt inserted the key first: lock its row and decide again.
           CONTINUE WHEN inserted = 0;
           IF NOT mutex THEN
             DELETE FROM holdfast_holds hh WHERE hh.key = p_key AND hh.session_id = p_session;
             INSERT INTO holdfast_holds (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at, value)
             VALUES (p_key, p_session, p_owner, 0, p_ttl, now_ms, now_ms + p_ttl, p_value);
             o_hold := true;
           END IF;
           o_kind := 'granted'; o_mode := p_mode; o_limit := p_limit;
           RETURN;
         END IF;

         IF l.mode IS NULL THEN
           -- A mutex row.
           IF l.expires_at > now_ms AND EXISTS (
                SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
             o_holder := ROW(l.key, l.session_id, l.owner, l.fencing_token, l.ttl_millis, l.granted_at, l.expires_at, l.value)::holdfast_holds;
             o_mode := 'exclusive'; o_limit := 1;
             o_kind := CASE WHEN l.session_id = p_session THEN 'existing' WHEN p_limit <> 1 THEN 'limit_mismatch' ELSE 'held' END;
             EXIT;
           END IF;
           -- Lapsed: taken over, by a mutex grant or by the key's first hold (its row becomes an anchor).
           IF mutex THEN
             UPDATE holdfast_locks hl SET session_id = p_session, owner = p_owner, fencing_token = 0,
                 ttl_millis = p_ttl, granted_at = now_ms, expires_at = now_ms + p_ttl
               WHERE hl.key = p_key;
           ELSE
             UPDATE holdfast_locks hl SET session_id = '', owner = '', fencing_token = 0, ttl_millis = 0, value = NULL,
                 granted_at = now_ms, expires_at = ${ANCHOR_EXPIRES_AT}, mode = p_mode, holder_limit = p_limit
               WHERE hl.key = p_key;
             DELETE FROM holdfast_holds hh WHERE hh.key = p_key AND hh.session_id = p_session;
             INSERT INTO holdfast_holds (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at, value)
             VALUES (p_key, p_session, p_owner, 0, p_ttl, now_ms, now_ms + p_ttl, p_value);
             o_hold := true;
           END IF;
           o_kind := 'granted'; o_mode := p_mode; o_limit := p_limit;
           RETURN;
         END IF;

         -- An anchor: the key's live holds decide.
         SELECT * INTO own FROM holdfast_holds h WHERE h.key = p_key AND h.session_id = p_session AND ${LIVE_HOLD('h', 'now_ms')};
         IF own.key IS NOT NULL THEN
           o_kind := 'existing'; o_holder := own; o_mode := l.mode; o_limit := l.holder_limit;
           RETURN;
         END IF;
         SELECT count(*) INTO live_count FROM holdfast_holds h WHERE h.key = p_key AND ${LIVE_HOLD('h', 'now_ms')};
         IF live_count = 0 THEN
           -- No live grant: the key takes this attempt's mode and limit.
           IF mutex THEN
             UPDATE holdfast_locks hl SET session_id = p_session, owner = p_owner, fencing_token = 0, ttl_millis = p_ttl,
                 granted_at = now_ms, expires_at = now_ms + p_ttl, mode = NULL, holder_limit = NULL, value = NULL
               WHERE hl.key = p_key;
           ELSE
             UPDATE holdfast_locks hl SET mode = p_mode, holder_limit = p_limit WHERE hl.key = p_key;
             DELETE FROM holdfast_holds hh WHERE hh.key = p_key AND hh.session_id = p_session;
             INSERT INTO holdfast_holds (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at, value)
             VALUES (p_key, p_session, p_owner, 0, p_ttl, now_ms, now_ms + p_ttl, p_value);
             o_hold := true;
           END IF;
           o_kind := 'granted'; o_mode := p_mode; o_limit := p_limit;
           RETURN;
         END IF;
         SELECT * INTO lowest FROM holdfast_holds h WHERE h.key = p_key AND ${LIVE_HOLD('h', 'now_ms')} ORDER BY h.fencing_token LIMIT 1;
         o_holder := lowest; o_mode := l.mode; o_limit := l.holder_limit;
         IF l.holder_limit <> p_limit THEN
           o_kind := 'limit_mismatch';
           RETURN;
         END IF;
         IF p_mode = 'shared' THEN
           -- Writer preference: a live recorded exclusive wait of another session keeps new readers out.
           admit := l.mode = 'shared' AND NOT EXISTS (
             SELECT 1 FROM holdfast_waiters w
             WHERE w.key = p_key AND w.session_id <> p_session AND w.mode IS DISTINCT FROM 'shared' AND w.granted_token IS NULL
               AND EXISTS (SELECT 1 FROM holdfast_instances i WHERE i.instance_id = w.instance_id AND i.expires_at > now_ms)
               AND EXISTS (SELECT 1 FROM holdfast_sessions s WHERE s.session_id = w.session_id AND s.expires_at > now_ms));
         ELSE
           admit := l.mode = 'exclusive' AND live_count < p_limit;
         END IF;
         IF admit THEN
           DELETE FROM holdfast_holds hh WHERE hh.key = p_key AND hh.session_id = p_session;
           INSERT INTO holdfast_holds (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at, value)
           VALUES (p_key, p_session, p_owner, 0, p_ttl, now_ms, now_ms + p_ttl, p_value);
           o_kind := 'granted'; o_hold := true; o_mode := p_mode; o_limit := p_limit; o_holder := NULL;
           RETURN;
         END IF;
         o_kind := 'held';
         EXIT;
       END LOOP;
       IF o_kind IS NULL THEN
         o_kind := 'retry';
         RETURN;
       END IF;
       -- Held, under the key's row lock (held until commit): recorded as the acquire-or-wait batch
       -- records a wait (migration 11), with its mode and value.
       IF o_kind = 'held' AND p_wait_id IS NOT NULL THEN
         INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at, ttl_millis, deadline_at, value, mode)
           SELECT p_wait_id, p_session, p_key, p_instance_id, holdfast_now_ms(), p_wait_ttl, holdfast_now_ms() + p_wait_budget,
                  p_value, CASE WHEN p_mode = 'shared' THEN 'shared' END
           WHERE EXISTS (SELECT 1 FROM holdfast_instances hi WHERE hi.instance_id = p_instance_id FOR KEY SHARE)
           ON CONFLICT (wait_id) DO NOTHING;
         GET DIAGNOSTICS inserted = ROW_COUNT;
         o_recorded := inserted = 1;
       END IF;
     END
     $$`,
    // Acquire, for every attempt (mutex or not): migration 11's acquire-or-wait batch, plus each
    // grant's value written with its token, and mode and limit. A mutex attempt on a mutex row runs
    // exactly migration 11's steps; an attempt that names several holders, or that finds an anchor,
    // is admitted by holdfast_admit_holder. Tokens are drawn in request order once every row lock of
    // the batch is held (SPI rule 1), for lock rows and holds alike.
    `CREATE FUNCTION holdfast_acquire_holders(p_keys text[], p_sessions text[], p_token_hashes text[], p_ttls integer[],
                                              p_values text[], p_modes text[], p_limits integer[],
                                              p_wait_ids text[], p_instance_ids text[], p_wait_ttls integer[], p_wait_budgets bigint[])
     RETURNS TABLE (r_index integer, r_kind text, r_key text, r_session_id text, r_owner text, r_fencing_token text,
                    r_ttl_millis integer, r_granted_at bigint, r_expires_at bigint, r_value text, r_mode text, r_limit integer,
                    r_wait_recorded boolean)
     LANGUAGE plpgsql AS $$
     DECLARE
       n integer := coalesce(array_length(p_keys, 1), 0);
       kinds text[];
       owners text[];
       holders holdfast_holds[] := array_fill(NULL::holdfast_holds, ARRAY[n]);
       key_modes text[] := array_fill(NULL::text, ARRAY[n]);
       key_limits integer[] := array_fill(NULL::integer, ARRAY[n]);
       is_hold boolean[] := array_fill(false, ARRAY[n]);
       recorded boolean[] := array_fill(false, ARRAY[n]);
       l holdfast_locks%ROWTYPE;
       a record;
       i integer;
       now_ms bigint;
       inserted integer;
       done boolean;
       m text;
       lim integer;
     BEGIN
       PERFORM 1 FROM holdfast_sessions hs WHERE hs.session_id = ANY(p_sessions) ORDER BY hs.session_id FOR SHARE;
       now_ms := holdfast_now_ms();
       SELECT array_agg(CASE WHEN hs.session_id IS NULL OR hs.expires_at <= now_ms THEN 'session_not_found'
                             WHEN hs.token_hash IS DISTINCT FROM u.h THEN 'unauthenticated' END ORDER BY u.ord),
              array_agg(hs.owner ORDER BY u.ord)
         INTO kinds, owners
         FROM unnest(p_sessions, p_token_hashes) WITH ORDINALITY AS u(sid, h, ord)
         LEFT JOIN holdfast_sessions hs ON hs.session_id = u.sid;

       FOR i IN SELECT u.ord FROM unnest(p_keys) WITH ORDINALITY AS u(k, ord) ORDER BY u.k COLLATE "C" LOOP
         CONTINUE WHEN kinds[i] IS NOT NULL;
         m := coalesce(p_modes[i], 'exclusive');
         lim := CASE WHEN m = 'shared' THEN 1 ELSE coalesce(p_limits[i], 1) END;
         done := false;
         IF m = 'exclusive' AND lim = 1 THEN
           FOR attempt IN 1..20 LOOP
             l := NULL;
             SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_keys[i];
             IF l.key IS NULL THEN
               now_ms := holdfast_now_ms();
               INSERT INTO holdfast_locks AS hl (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
               VALUES (p_keys[i], p_sessions[i], owners[i], 0, p_ttls[i], now_ms, now_ms + p_ttls[i])
               ON CONFLICT (key) DO NOTHING;
               GET DIAGNOSTICS inserted = ROW_COUNT;
               IF inserted = 1 THEN kinds[i] := 'granted'; done := true; EXIT; END IF;
               CONTINUE;
             END IF;
             -- An anchor: a key that admits several holders decides under its row lock.
             EXIT WHEN l.mode IS NOT NULL;
             now_ms := holdfast_now_ms();
             IF l.expires_at > now_ms AND (p_wait_ids[i] IS NULL OR l.session_id = p_sessions[i]) AND EXISTS (
                  SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
               kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
               holders[i] := ROW(l.key, l.session_id, l.owner, l.fencing_token, l.ttl_millis, l.granted_at, l.expires_at, l.value)::holdfast_holds;
               done := true; EXIT;
             END IF;
             l := NULL;
             SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_keys[i] FOR UPDATE;
             CONTINUE WHEN l.key IS NULL;
             EXIT WHEN l.mode IS NOT NULL;
             now_ms := holdfast_now_ms();
             IF l.expires_at > now_ms AND EXISTS (
                  SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
               kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
               holders[i] := ROW(l.key, l.session_id, l.owner, l.fencing_token, l.ttl_millis, l.granted_at, l.expires_at, l.value)::holdfast_holds;
               done := true;
               IF kinds[i] = 'held' AND p_wait_ids[i] IS NOT NULL THEN
                 INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at, ttl_millis, deadline_at, value)
                   SELECT p_wait_ids[i], p_sessions[i], p_keys[i], p_instance_ids[i], holdfast_now_ms(), p_wait_ttls[i],
                          holdfast_now_ms() + p_wait_budgets[i], p_values[i]
                   WHERE EXISTS (SELECT 1 FROM holdfast_instances hi WHERE hi.instance_id = p_instance_ids[i] FOR KEY SHARE)
                   ON CONFLICT (wait_id) DO NOTHING;
                 GET DIAGNOSTICS inserted = ROW_COUNT;
                 recorded[i] := inserted = 1;
               END IF;
               EXIT;
             END IF;
             UPDATE holdfast_locks hl
               SET session_id = p_sessions[i], owner = owners[i], fencing_token = 0,
                   ttl_millis = p_ttls[i], granted_at = now_ms, expires_at = now_ms + p_ttls[i]
               WHERE hl.key = p_keys[i];
             kinds[i] := 'granted'; done := true; EXIT;
           END LOOP;
         END IF;
         IF NOT done AND (l.mode IS NOT NULL OR m <> 'exclusive' OR lim <> 1) THEN
           SELECT * INTO a FROM holdfast_admit_holder(p_keys[i], p_sessions[i], owners[i], p_ttls[i], p_values[i], m, lim,
             p_wait_ids[i], p_instance_ids[i], p_wait_ttls[i], p_wait_budgets[i]);
           kinds[i] := a.o_kind;
           is_hold[i] := a.o_hold;
           holders[i] := a.o_holder;
           key_modes[i] := a.o_mode;
           key_limits[i] := a.o_limit;
           recorded[i] := a.o_recorded;
           done := a.o_kind <> 'retry';
         END IF;
         IF NOT done THEN kinds[i] := 'retry'; END IF;
       END LOOP;

       FOR i IN 1..n LOOP
         IF kinds[i] = 'granted' AND is_hold[i] THEN
           RETURN QUERY UPDATE holdfast_holds hh SET fencing_token = nextval('holdfast_fencing_seq')
             WHERE hh.key = p_keys[i] AND hh.session_id = p_sessions[i]
             RETURNING i, 'granted'::text, hh.key::text, hh.session_id, hh.owner, hh.fencing_token::text,
                       hh.ttl_millis, hh.granted_at, hh.expires_at, hh.value, key_modes[i], key_limits[i], false;
         ELSIF kinds[i] = 'granted' THEN
           -- The value with the token: a takeover's placeholder write cleared the previous holder's (migration 12).
           RETURN QUERY UPDATE holdfast_locks hl SET fencing_token = nextval('holdfast_fencing_seq'), value = p_values[i]
             WHERE hl.key = p_keys[i]
             RETURNING i, 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text,
                       hl.ttl_millis, hl.granted_at, hl.expires_at, hl.value, 'exclusive'::text, 1, false;
         ELSIF kinds[i] IN ('held', 'existing', 'limit_mismatch') THEN
           RETURN QUERY SELECT i, kinds[i], (holders[i]).key::text, (holders[i]).session_id, (holders[i]).owner,
             (holders[i]).fencing_token::text, (holders[i]).ttl_millis, (holders[i]).granted_at, (holders[i]).expires_at,
             (holders[i]).value, coalesce(key_modes[i], 'exclusive'), coalesce(key_limits[i], 1), recorded[i];
         ELSE
           RETURN QUERY SELECT i, kinds[i], NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint,
             NULL::text, NULL::text, NULL::integer, false;
         END IF;
       END LOOP;
     END
     $$`,
    ACQUIRE_ONE,
    // A hold as a lock row, for the previous release's functions (their answers are lock rows).
    `CREATE FUNCTION holdfast_hold_as_lock(h holdfast_holds) RETURNS holdfast_locks LANGUAGE sql IMMUTABLE AS $$
       SELECT h.key, h.session_id, h.owner, h.fencing_token, h.ttl_millis, h.granted_at, h.expires_at, h.value, NULL::text, NULL::integer
     $$`,
    ANCHOR_AWARE_SINGLE,
    ANCHOR_AWARE_BATCH(v4, 'holdfast_try_acquire_batch', 'NULL, NULL, NULL, NULL', ''),
    ANCHOR_AWARE_BATCH(
      v11,
      'holdfast_acquire_or_wait_batch',
      'p_wait_ids[i], p_instance_ids[i], p_wait_ttls[i], p_wait_budgets[i]',
      '\n             recorded[i] := a.o_recorded;',
    ),
  ],
};
