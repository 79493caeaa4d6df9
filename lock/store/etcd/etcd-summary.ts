/** The etcd store's summary: live sessions and held locks counted by the liveness test every read uses. */
import { tallyByPolicy } from '../policy-tally.js';
import type { StoreSummary, SummaryQuery } from '../spi.js';
import type { EtcdContext } from './etcd-context.js';
import { isAnchor } from './holders.js';
import { decodeLock } from './records.js';

/**
 * Live sessions and grants by the same test as everything else (leased keys
 * present, holder incarnation matching): each grant of a multi-holder key counts. `oldestHeldMillis` is advisory: this
 * server's clock minus the granting server's grantedAt, floored at 0.
 */
export async function summarize(ctx: EtcdContext, query: SummaryQuery = {}): Promise<StoreSummary> {
  const liveSessions = new Map<string, string>();
  for await (const page of ctx.scanPages(ctx.keys.sessionsPrefix)) {
    for (const kv of page) {
      const id = ctx.keys.sessionIdOf(kv.key);
      if (id !== null) liveSessions.set(id, String(kv.create_revision));
    }
  }
  let heldLocks = 0;
  let oldestGrantedAt = Number.POSITIVE_INFINITY;
  const held: { key: string; grantedAt: number }[] = [];
  for await (const page of ctx.scanPages(ctx.keys.locksPrefix)) {
    for (const kv of page) {
      // A mutex grant is its key's record; a multi-holder key counts each grant under its anchor (holders.ts).
      if (isAnchor(kv)) continue;
      const key = ctx.keys.lockKeyOf(kv.key) ?? ctx.keys.holderOf(kv.key)?.key ?? null;
      if (key === null) continue;
      const row = decodeLock(key, kv);
      if (liveSessions.get(row.stored.sessionId) !== row.stored.sessionRevision) continue;
      heldLocks += 1;
      if (query.policies) held.push({ key, grantedAt: row.stored.grantedAt });
      oldestGrantedAt = Math.min(oldestGrantedAt, row.stored.grantedAt);
    }
  }
  const now = ctx.clock();
  const oldestHeldMillis = heldLocks === 0 ? 0 : Math.max(0, now - oldestGrantedAt);
  const byPolicy = query.policies ? { byPolicy: tallyByPolicy(held, query.policies, now) } : {};
  return { heldLocks, activeSessions: liveSessions.size, oldestHeldMillis, ...byPolicy };
}
