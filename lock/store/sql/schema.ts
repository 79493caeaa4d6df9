/**
 * Versioned, idempotent schema migrations for the SQL store. Each migration
 * runs once, in order, inside a transaction holding an advisory lock so that
 * several servers starting together do not race.
 */
import type { SqlDatabase } from './queryable.js';

/**
 * A migration is either `sql` (plain DDL, split on semicolons) or `statements`
 * (run one by one as given: function bodies contain semicolons).
 */
const MIGRATIONS: readonly ({ version: number } & ({ sql: string } | { statements: readonly string[] }))[] = [
  {
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
  },
  {
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
  },
  {
    // v3 (issue 11): one service across instances. The instance registry (heartbeat on the
    // database clock), the fleet-wide wait state, and a release notification for keys
    // somebody waits on, sent by the transaction that ends the lock.
    version: 3,
    statements: [
      `CREATE TABLE holdfast_instances (
         instance_id  text PRIMARY KEY,
         started_at   bigint NOT NULL,
         heartbeat_at bigint NOT NULL,
         expires_at   bigint NOT NULL,
         -- What an instance publishes for the fleet (e.g. its contention top-K), JSON.
         published    jsonb
       )`,
      // A wait vanishes with its session (ended by any instance) and with its instance (swept
      // once its heartbeat lapses): a dead instance leaves no waiters behind.
      `CREATE TABLE holdfast_waiters (
         wait_id        text PRIMARY KEY,
         session_id     text NOT NULL REFERENCES holdfast_sessions (session_id) ON DELETE CASCADE,
         key            text COLLATE "C" NOT NULL,
         instance_id    text NOT NULL REFERENCES holdfast_instances (instance_id) ON DELETE CASCADE,
         started_at     bigint NOT NULL,
         -- Set by the deadlock detector: this wait is the one to answer DEADLOCK_DETECTED.
         victim_cycle   jsonb
       )`,
      `CREATE INDEX holdfast_waiters_key ON holdfast_waiters (key)`,
      `CREATE INDEX holdfast_waiters_session_id ON holdfast_waiters (session_id)`,
      `CREATE INDEX holdfast_waiters_instance_id ON holdfast_waiters (instance_id)`,
      // One statement-level trigger: every lock row that ends (release, expiry, revoke, session
      // end) notifies in its own transaction, delivered on commit. Only keys with a registered
      // wait are sent (a release nobody waits for costs no NOTIFY), batched into payloads under
      // PostgreSQL's 8000-byte limit; keys hold no control characters, so newline separates them.
      `CREATE FUNCTION holdfast_notify_released() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         payload text := '';
         k text;
       BEGIN
         FOR k IN SELECT DISTINCT e.key FROM ended e
                  WHERE EXISTS (SELECT 1 FROM holdfast_waiters w WHERE w.key = e.key) ORDER BY 1 LOOP
           IF payload <> '' AND octet_length(payload) + octet_length(k) + 1 > 7900 THEN
             PERFORM pg_notify('holdfast_released', payload);
             payload := '';
           END IF;
           payload := CASE WHEN payload = '' THEN k ELSE payload || chr(10) || k END;
         END LOOP;
         IF payload <> '' THEN
           PERFORM pg_notify('holdfast_released', payload);
         END IF;
         RETURN NULL;
       END
       $$`,
      `CREATE TRIGGER holdfast_locks_released AFTER DELETE ON holdfast_locks
         REFERENCING OLD TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION holdfast_notify_released()`,
      // No trigger on UPDATE: a renew ends nothing, and a takeover of a lapsed grant hands the
      // key straight to a new holder, so a woken waiter could only lose again.
    ],
  },
  {
    // v4: group commit for acquires. One call grants a batch (one request per key): row locks
    // in key order first, then tokens drawn in request order, so every token in the batch is
    // drawn after every row lock the batch depends on (SPI rule 1, across keys too).
    version: 4,
    statements: [
      `CREATE FUNCTION holdfast_try_acquire_batch(p_keys text[], p_sessions text[], p_token_hashes text[], p_ttls integer[])
       RETURNS TABLE (r_index integer, r_kind text, r_key text, r_session_id text, r_owner text, r_fencing_token text,
                      r_ttl_millis integer, r_granted_at bigint, r_expires_at bigint)
       LANGUAGE plpgsql AS $$
       DECLARE
         n integer := coalesce(array_length(p_keys, 1), 0);
         kinds text[];
         owners text[];
         holders holdfast_locks[] := array_fill(NULL::holdfast_locks, ARRAY[n]);
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
             IF l.expires_at > now_ms AND EXISTS (
                  SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
               kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
               holders[i] := l; done := true; EXIT;
             END IF;
             -- Looks free (lapsed, or its session is gone): lock the row, then decide again.
             l := NULL;
             SELECT * INTO l FROM holdfast_locks hl WHERE hl.key = p_keys[i] FOR UPDATE;
             CONTINUE WHEN l.key IS NULL;
             now_ms := holdfast_now_ms();
             IF l.expires_at > now_ms AND EXISTS (
                  SELECT 1 FROM holdfast_sessions x WHERE x.session_id = l.session_id AND x.expires_at > now_ms) THEN
               kinds[i] := CASE WHEN l.session_id = p_sessions[i] THEN 'existing' ELSE 'held' END;
               holders[i] := l; done := true; EXIT;
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
                         hl.ttl_millis, hl.granted_at, hl.expires_at;
           ELSIF kinds[i] IN ('held', 'existing') THEN
             RETURN QUERY SELECT i, kinds[i], (holders[i]).key::text, (holders[i]).session_id, (holders[i]).owner,
               (holders[i]).fencing_token::text, (holders[i]).ttl_millis, (holders[i]).granted_at, (holders[i]).expires_at;
           ELSE
             RETURN QUERY SELECT i, kinds[i], NULL::text, NULL::text, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::bigint;
           END IF;
         END LOOP;
       END
       $$`,
    ],
  },
  {
    version: 5,
    // Expand only: a release that does not know the column leaves it NULL, as for sessions opened
    // without a client token.
    statements: [`ALTER TABLE holdfast_sessions ADD COLUMN opened_by text`],
  },
  {
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
         FOR i IN SELECT u.ord FROM unnest(p_keys) WITH ORDINALITY AS u(k, ord) ORDER BY u.k COLLATE "C" LOOP
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
  },
];

export async function migrate(db: SqlDatabase): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS holdfast_schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(7070707)`);
    const applied = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM holdfast_schema_migrations')).map((r) => r.version),
    );
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      const statements = 'sql' in migration ? splitStatements(migration.sql) : migration.statements;
      for (const statement of statements) await tx.query(statement);
      await tx.query('INSERT INTO holdfast_schema_migrations (version) VALUES ($1)', [migration.version]);
    }
  });
}

/** `sql` migrations contain no semicolons inside literals or bodies, so a plain split is exact. */
function splitStatements(sql: string): string[] {
  return sql
    .split(';')
    .map((s) => s.replace(/--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}
