/**
 * Session leases. Each session owns one etcd lease; its session record and all
 * its locks are attached to it, so if every Holdfast server dies, etcd itself
 * deletes the session's locks when the lease runs out (nobody heartbeats).
 * The library's Lease class always grants a new lease, so these talk to the
 * lease service directly by id.
 */
import type { Etcd3 } from 'etcd3';
import { retryRead } from './etcd-client.js';

/**
 * The lease outlives the session's logical TTL by this much, so the sweeper
 * (which reports `session_expired`) normally ends the session before etcd does;
 * etcd's deletion is the backstop for when no server is left to sweep.
 */
const LEASE_GRACE_SECONDS = 1;
const KEEPALIVE_TIMEOUT_MS = 3_000;

export function leaseTtlSeconds(sessionTtlMillis: number): number {
  return Math.ceil(sessionTtlMillis / 1000) + LEASE_GRACE_SECONDS;
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

/** Best effort: the keys are already gone when this runs; a lease left behind just runs out. */
export async function revokeLease(client: Etcd3, leaseId: string): Promise<void> {
  try {
    await client.leaseClient.leaseRevoke({ ID: leaseId });
  } catch {
    // Lease already expired, or etcd unreachable: either way it ends by its TTL.
  }
}

/** Every key attached to the lease (the session record and the session's locks). */
export async function keysOfLease(client: Etcd3, leaseId: string): Promise<Buffer[]> {
  const response = await retryRead(() => client.leaseClient.leaseTimeToLive({ ID: leaseId, keys: true }));
  return Number(response.TTL) < 0 ? [] : response.keys;
}
