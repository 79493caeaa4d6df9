/**
 * Held locks split by policy (StoreSummary.byPolicy) for stores that hold their live locks in
 * hand (etcd after its range read, memory): every key under its longest-prefix policy
 * (contract/policies.ts), every policy present even when it holds nothing, so a gauge falls to 0.
 */
import { NO_POLICY, policyForKey, type LockPolicy } from '../../contract/policies.js';
import type { PolicyHeldSummary } from './spi.js';

export function tallyByPolicy(
  locks: Iterable<{ key: string; grantedAt: number }>,
  policies: readonly LockPolicy[],
  now: number,
): PolicyHeldSummary[] {
  const rows = emptyRows(policies);
  const byName = new Map(rows.map((row) => [row.policy, row]));
  for (const lock of locks) {
    const row = byName.get(policyForKey(policies, lock.key)?.name ?? NO_POLICY)!;
    row.heldLocks += 1;
    row.oldestHeldMillis = Math.max(row.oldestHeldMillis, now - lock.grantedAt);
  }
  return rows;
}

/** One row per policy name (in the file's order), then NO_POLICY; a name given twice counts once. */
export function emptyRows(policies: readonly LockPolicy[]): PolicyHeldSummary[] {
  const names = [...new Set([...policies.map((p) => p.name), NO_POLICY])];
  return names.map((policy) => ({ policy, heldLocks: 0, oldestHeldMillis: 0 }));
}
