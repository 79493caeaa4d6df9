/**
 * etcd3's own lock recipe, `client.lock(key)`: a fresh lease per acquire, a create-if-absent put
 * on that lease, and the lease revoked on release. It does not wait: on a held key it revokes
 * its lease and throws EtcdLockFailedError at once, so hot cells retry the way a user would,
 * with a small full-jitter backoff, until the wait budget runs out.
 */
import { Etcd3, EtcdLockFailedError } from 'etcd3';
import type { PeerLoad, PeerSystem } from './system.js';

export interface Backoff {
  /** First window, ms: the first retry sleeps uniform [0, base]. */
  baseMillis: number;
  /** The window stops doubling here. */
  capMillis: number;
}

/** Full jitter: uniform in [0, min(cap, base·2^attempt)]; `random` in [0, 1). */
export function fullJitterMillis(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const window = Math.min(backoff.capMillis, backoff.baseMillis * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * (window + 1));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface EtcdRecipeOptions {
  endpoints: string[];
  /** The etcd member's CPU so far (it serves this system alone). */
  cpuMillis: () => number;
  waitBudgetMillis: number;
  backoff: Backoff;
}

export function etcdRecipeSystem(options: EtcdRecipeOptions): PeerSystem {
  return {
    id: 'etcd3-lock',
    label: 'etcd3 client.lock()',
    serverCpuMillis: () => ({ etcd: options.cpuMillis() }),
    async open(): Promise<PeerLoad> {
      const client = new Etcd3({ hosts: options.endpoints });
      await client.get('peers-bench-warm-up').string(); // the connection is up before the window
      return {
        async acquire(_worker, key) {
          const deadline = performance.now() + options.waitBudgetMillis;
          for (let attempt = 0; ; attempt += 1) {
            const lock = client.lock(key); // the recipe's default lease TTL: 30 s
            try {
              await lock.acquire();
              return { release: () => lock.release() };
            } catch (error) {
              if (!(error instanceof EtcdLockFailedError)) throw error;
              const delay = fullJitterMillis(attempt, options.backoff);
              if (performance.now() + delay >= deadline) return null;
              await sleep(delay);
            }
          }
        },
        async close() {
          client.close();
        },
      };
    },
  };
}
