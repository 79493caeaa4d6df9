/** Migration 3: the instance registry, fleet-wide waits and the release feed. */
import type { Migration } from './migration.js';

export const v3: Migration = {
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
};
