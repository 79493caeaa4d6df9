/**
 * `holdfast tokens advance` (issue 25): opens the configured store directly — the same
 * HOLDFAST_STORE / DATABASE_URL / HOLDFAST_DATA_DIR / HOLDFAST_AUDIT_KEY_FILE as the server — and
 * advances its token floor. Direct, not through a server: a restored store's servers refuse
 * writes, and a restore is often done before any server is started again.
 */
import type { ServerConfig } from '../config.js';
import { openStore } from './open-store.js';
import type { AuditDraft, TokenAdvanceResult } from './spi.js';

/** Why etcd has no advance: its tokens are its revisions, which only the restore itself can raise. */
export const ETCD_ADVANCE_REFUSAL =
  'the etcd store has nothing to advance: its fencing tokens are etcd revisions (revision × 1000 + slot), and no write ' +
  "can raise a restored cluster's revision past the one it had. Restore etcd with `etcdutl snapshot restore --bump-revision N " +
  '--mark-compacted` (etcd 3.6, or a 3.5 release that has the flags; Debian\'s etcd 3.4 `etcdctl snapshot restore` has neither), ' +
  'N above the revisions written since the snapshot was taken (runbooks/restored-store-refuses-writes.md)';

export class TokenAdvanceUnsupportedError extends Error {}

export async function advanceTokens(config: ServerConfig, audit: AuditDraft): Promise<TokenAdvanceResult & { backend: string }> {
  if (config.HOLDFAST_STORE === 'etcd') throw new TokenAdvanceUnsupportedError(ETCD_ADVANCE_REFUSAL);
  const store = await openStore(config);
  try {
    if (!store.tokenFloor) throw new TokenAdvanceUnsupportedError(`the ${store.backend} store has no token floor`);
    return { backend: store.backend, ...(await store.tokenFloor.advance({ audit })) };
  } finally {
    await store.close();
  }
}
