/** Migration 7: the sealed audit head, the prune checkpoint and each entry's key id (issue 25). */
import type { Migration } from './migration.js';

export const v7: Migration = {
  // Expand only. A release that does not know these columns appends as before: its entries have no
  // key id (verified with every key the file holds), and the trigger clears the head's seal when it
  // moves the head without sealing it, so verify says "unsealed" (the next append by this release
  // seals it again) instead of reporting a rewound head.
  version: 7,
  statements: [
    `ALTER TABLE holdfast_audit ADD COLUMN key_id text`,
    `ALTER TABLE holdfast_audit_head
       ADD COLUMN checkpoint_id bigint NOT NULL DEFAULT 0,
       ADD COLUMN checkpoint_hash text NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000',
       ADD COLUMN key_id text,
       ADD COLUMN seal text`,
    `CREATE FUNCTION holdfast_audit_head_unseal() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NEW.last_id IS DISTINCT FROM OLD.last_id AND NEW.seal IS NOT DISTINCT FROM OLD.seal THEN
         NEW.seal := NULL;
         NEW.key_id := NULL;
       END IF;
       RETURN NEW;
     END
     $$`,
    `CREATE TRIGGER holdfast_audit_head_unseal BEFORE UPDATE ON holdfast_audit_head
       FOR EACH ROW EXECUTE FUNCTION holdfast_audit_head_unseal()`,
    // Prune finds the oldest entry to keep by its time.
    `CREATE INDEX holdfast_audit_at ON holdfast_audit (at)`,
  ],
};
