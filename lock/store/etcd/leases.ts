/**
 * Leases: etcd's clock decides every expiry. A session's liveness key sits on
 * the session's lease (heartbeat = keep-alive); each grant's liveness key sits
 * on a lease of its own with the lock's TTL (renew = the key moved to a fresh
 * lease, in a txn that compares what it depends on). No server clock enters.
 *
 * Lease TTLs are whole seconds: a TTL is rounded up, so a lock or session lives
 * at least its TTL and less than 1 s longer. etcd also raises any TTL below its
 * minimum (1.5 × election timeout, 2 s at the default 1 s) to that minimum.
 * The library's Lease class always grants a new lease, so these talk to the
 * lease service directly by id.
 */
import type { Etcd3 } from 'etcd3';

const KEEPALIVE_TIMEOUT_MS = 3_000;

export function leaseTtlSeconds(ttlMillis: number): number {
  return Math.max(1, Math.ceil(ttlMillis / 1000));
}

export async function grantLease(client: Etcd3, ttlSeconds: number): Promise<string> {
  const response = await client.leaseClient.leaseGrant({ TTL: ttlSeconds });
  return String(response.ID);
}

/** One keep-alive; resolves with the remaining TTL in seconds (≤ 0 when the lease is gone). */
export async function keepAliveOnce(client: Etcd3, leaseId: string): Promise<number> {
  const stream = await client.leaseClient.leaseKeepAlive();
  try {
    const response = await new Promise<{ TTL: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('lease keep-alive timed out')), KEEPALIVE_TIMEOUT_MS);
      stream.on('data', (data: { TTL: string }) => {
        clearTimeout(timer);
        resolve(data);
      });
      stream.on('error', (error: Error) => {
        clearTimeout(timer);
        reject(error);
      });
      stream.write({ ID: leaseId });
    });
    return Number(response.TTL);
  } finally {
    stream.end();
  }
}

/** Best effort: the keys are already gone or moved when this runs; a lease left behind just runs out. */
export async function revokeLease(client: Etcd3, leaseId: string): Promise<void> {
  try {
    await client.leaseClient.leaseRevoke({ ID: leaseId });
  } catch {
    // Lease already expired, or etcd unreachable: either way it ends by its TTL.
  }
}

/** Remaining whole seconds of a lease, -1 when it is gone (advisory expiry for records). */
export async function leaseRemainingSeconds(client: Etcd3, leaseId: string): Promise<number> {
  const response = await client.leaseClient.leaseTimeToLive({ ID: leaseId, keys: false });
  return Number(response.TTL);
}
