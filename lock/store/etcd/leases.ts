/**
 * Leases: etcd's clock decides every expiry. A session's liveness key sits on
 * the session's own lease (heartbeat = keep-alive): it lives at least its TTL and
 * less than 1 s longer (TTLs are whole seconds, rounded up). Each grant's liveness
 * key sits on a pooled lease of its TTL bucket (GrantLeasePool below; renew = the
 * key moved to a fresh one, in a txn that compares what it depends on): at least
 * its TTL, less than TTL + 1.25 s. No server wall clock enters. etcd also raises
 * any TTL below its minimum (1.5 × election timeout: 2 s at the default 1 s).
 * The library's Lease class always grants a new lease, so these talk to the
 * lease service directly by id.
 */
import type { Etcd3 } from 'etcd3';
import { retryRead } from './etcd-client.js';

export function leaseTtlSeconds(ttlMillis: number): number {
  return Math.max(1, Math.ceil(ttlMillis / 1000));
}

export async function grantLease(client: Etcd3, ttlSeconds: number): Promise<string> {
  const response = await client.leaseClient.leaseGrant({ TTL: ttlSeconds });
  return String(response.ID);
}

/** Best effort: the keys are already gone or moved when this runs; a lease left behind just runs out. */
export async function revokeLease(client: Etcd3, leaseId: string): Promise<void> {
  try {
    await client.leaseClient.leaseRevoke({ ID: leaseId });
  } catch {
    // Lease already expired, or etcd unreachable: either way it ends by its TTL.
  }
}

/** A lease's remaining and granted life in whole seconds; null once it is gone. */
export async function leaseTimeToLive(client: Etcd3, leaseId: string): Promise<{ remainingSeconds: number; grantedSeconds: number } | null> {
  // A read like any other: an etcd without a leader answers NOT_LEADER, never a raw gRPC error (a 500).
  const response = await retryRead(() => client.leaseClient.leaseTimeToLive({ ID: leaseId }));
  const remainingSeconds = Number(response.TTL);
  return remainingSeconds > 0 ? { remainingSeconds, grantedSeconds: Number(response.grantedTTL) } : null;
}

/**
 * How long a pooled grant lease may be handed out after it was requested. A
 * lease for TTL t is granted for ceil((t + REUSE_WINDOW_MS) / 1 s) seconds, so
 * whenever it is handed out its remaining life is still at least t.
 */
const REUSE_WINDOW_MS = 250;

interface PooledLease {
  id: Promise<string>;
  /** performance.now() before the grant request was sent: etcd starts counting later than that. */
  requestedAt: number;
}

/**
 * Grant leases shared by the grants of one TTL bucket: a lease per grant would
 * cost two extra raft writes per acquire (grant, then revoke). Each grant still
 * has an etcd-clocked lifetime of its own: at least its TTL from the moment its
 * request reached this process, less than TTL + REUSE_WINDOW_MS + 1 s. Only a
 * duration measured on this process's monotonic clock (not its wall clock) picks
 * the lease, and it errs towards a longer life. A shared lease is never revoked:
 * it runs out by itself once no grant uses it.
 */
export class GrantLeasePool {
  private readonly current = new Map<number, PooledLease>();

  constructor(private readonly grant: (ttlSeconds: number) => Promise<string>) {}

  /** A lease whose remaining life is at least `ttlMillis` from now. */
  async forTtl(ttlMillis: number): Promise<string> {
    const seconds = leaseTtlSeconds(ttlMillis + REUSE_WINDOW_MS);
    const slack = seconds * 1000 - ttlMillis;
    const pooled = this.current.get(seconds);
    if (pooled && performance.now() - pooled.requestedAt <= slack) return pooled.id;
    const fresh: PooledLease = { requestedAt: performance.now(), id: this.grant(seconds) };
    this.current.set(seconds, fresh);
    fresh.id.catch(() => {
      if (this.current.get(seconds) === fresh) this.current.delete(seconds);
    });
    return fresh.id;
  }
}
