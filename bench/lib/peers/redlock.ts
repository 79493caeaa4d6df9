/**
 * Redlock v5 (`redlock` 5.0.0-beta.2, with `ioredis`) on one Redis: one ioredis connection per
 * cell shared by every worker (as one service process would), `redlock.acquire([key], ttl)` and
 * `lock.release()`. Redlock does not wait on the server: a held key is retried `retryCount`
 * times, `retryDelay` ± `retryJitter` apart. The bench keeps its default delay and jitter and
 * sets only how many retries fit in the wait budget.
 */
import { Redis } from 'ioredis';
import Redlock, { ExecutionError, ResourceLockedError } from 'redlock';
import { processCpuMillis } from '../cpu.js';
import type { PeerLoad, PeerSystem } from './system.js';

/** Redlock 5's defaults (its `defaultSettings`): a failed attempt sleeps 200 ± 100 ms. */
export const REDLOCK_RETRY_DELAY_MILLIS = 200;
/** Like etcd3's lease and Holdfast's default lock TTL. */
const LOCK_TTL_MILLIS = 30_000;

export function redlockSystem(options: { port: number; redisPid: number; waitBudgetMillis: number }): PeerSystem {
  const retryCount = Math.max(1, Math.ceil(options.waitBudgetMillis / REDLOCK_RETRY_DELAY_MILLIS));
  return {
    id: 'redlock',
    label: 'Redlock v5, one Redis',
    serverCpuMillis: () => ({ 'redis-server': processCpuMillis(options.redisPid) }),
    async open(): Promise<PeerLoad> {
      const redis = new Redis({ host: '127.0.0.1', port: options.port, lazyConnect: true });
      await redis.connect();
      const redlock = new Redlock([redis], { retryCount });
      // Redlock emits every failed attempt as an error event (an EventEmitter throws one nobody
      // listens to); a held key is the expected case, anything else surfaces through acquire.
      redlock.on('error', (error: unknown) => {
        if (!(error instanceof ResourceLockedError)) process.emitWarning(`redlock: ${String(error)}`);
      });
      return {
        async acquire(_worker, key) {
          try {
            const lock = await redlock.acquire([key], LOCK_TTL_MILLIS);
            return {
              async release() {
                await lock.release();
              },
            };
          } catch (error) {
            // Every attempt voted against: the retries ran out on a held key.
            if (error instanceof ExecutionError) return null;
            throw error;
          }
        },
        async close() {
          await redis.quit();
        },
      };
    },
  };
}
