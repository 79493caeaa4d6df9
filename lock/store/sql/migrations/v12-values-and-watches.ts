/**
 * Migration 12 (issue 23): a holder's value, and the holder-change feed L8 watches park on.
 * Expand only: a release that does not know these columns, table and triggers keeps working
 * beside one that does (its grants simply carry no value).
 */
import type { Migration } from './migration.js';

export const v12: Migration = {
  version: 12,
  statements: [
    // A holder's value (L4 `value`, replaced by a proclaim: L5 `value`). A handed grant (FIFO
    // handoff) carries its wait's value, so the wait records it too.
    `ALTER TABLE holdfast_locks ADD COLUMN value text`,
    `ALTER TABLE holdfast_waiters ADD COLUMN value text`,
    // A new token is a new grant: whatever wrote it (a takeover, a handoff, a release that does not
    // know values), the previous holder's value does not pass to it. The statement that grants sets
    // the new holder's own value after the token, in the same transaction (acquire-batch.ts).
    // The WHEN clause is evaluated without calling the function: a grant with no value to clear costs nothing.
    `CREATE FUNCTION holdfast_clear_value() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       NEW.value := NULL;
       RETURN NEW;
     END
     $$`,
    `CREATE TRIGGER holdfast_locks_new_grant_clears_value BEFORE UPDATE OF fencing_token ON holdfast_locks
       FOR EACH ROW WHEN (OLD.fencing_token IS DISTINCT FROM NEW.fencing_token AND OLD.value IS NOT NULL)
       EXECUTE FUNCTION holdfast_clear_value()`,
    // Sets the value of what an acquire answered, in the acquire's own statement (a volatile function
    // called per answered row sees the acquire function's writes): a new grant's value, an existing
    // grant's value as it is, and the value a recorded wait would carry should a release hand it the key.
    `CREATE FUNCTION holdfast_settle_acquire_value(p_kind text, p_key text, p_token text, p_value text,
                                                   p_wait_id text, p_wait_recorded boolean) RETURNS text
     LANGUAGE plpgsql AS $$
     DECLARE
       v text;
     BEGIN
       IF p_kind = 'granted' THEN
         UPDATE holdfast_locks hl SET value = p_value
           WHERE hl.key = p_key AND hl.fencing_token = p_token::bigint AND hl.value IS DISTINCT FROM p_value;
         RETURN p_value;
       END IF;
       IF p_kind = 'held' AND p_wait_recorded AND p_value IS NOT NULL THEN
         UPDATE holdfast_waiters hw SET value = p_value WHERE hw.wait_id = p_wait_id;
       END IF;
       IF p_kind IN ('existing', 'held') THEN
         SELECT hl.value INTO v FROM holdfast_locks hl WHERE hl.key = p_key AND hl.fencing_token = p_token::bigint;
       END IF;
       RETURN v;
     END
     $$`,
    // The same for a grant a release handed to a wait: the wait's value, in the releasing statement.
    `CREATE FUNCTION holdfast_settle_handed_value(p_key text, p_token text, p_wait_id text) RETURNS text
     LANGUAGE plpgsql AS $$
     DECLARE
       v text;
     BEGIN
       SELECT hw.value INTO v FROM holdfast_waiters hw WHERE hw.wait_id = p_wait_id;
       IF v IS NOT NULL THEN
         UPDATE holdfast_locks hl SET value = v WHERE hl.key = p_key AND hl.fencing_token = p_token::bigint;
       END IF;
       RETURN v;
     END
     $$`,
    // Keys some instance has a parked L8 watch on; a row goes with its instance.
    `CREATE TABLE holdfast_watches (
       key         text COLLATE "C" NOT NULL,
       instance_id text NOT NULL REFERENCES holdfast_instances (instance_id) ON DELETE CASCADE,
       PRIMARY KEY (key, instance_id)
     )`,
    `CREATE INDEX holdfast_watches_instance_id ON holdfast_watches (instance_id)`,
    // A grant's statement (acquire-batch.ts) and a handoff's (sql-grants.ts) notify the holders
    // channel themselves when the key is watched, in their own query (no trigger, no function call on
    // the hot path). Every end of a grant — release, sweep, revoke, session end — goes through the
    // DELETE statement trigger that already announces releases to waits (migration 3): it now tells
    // watches too, for keys some instance watches.
    `CREATE OR REPLACE FUNCTION holdfast_notify_released() RETURNS trigger LANGUAGE plpgsql AS $$
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
       FOR k IN SELECT DISTINCT e.key FROM ended e
                WHERE EXISTS (SELECT 1 FROM holdfast_watches hw WHERE hw.key = e.key) LOOP
         PERFORM pg_notify('holdfast_holders', k);
       END LOOP;
       RETURN NULL;
     END
     $$`,
  ],
};
