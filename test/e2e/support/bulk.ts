/**
 * Many held locks, fast and bounded: `sessions` sessions acquire `count` keys
 * between them with at most `concurrency` requests in flight, while a
 * heartbeat keeps the sessions alive. `release()` closes the sessions (L3),
 * which frees every lock in one call each.
 */
import { LockApi } from './lock-api.js';

export interface BulkLocks {
  keys: string[];
  millis: number;
  release(): Promise<void>;
}

export async function holdManyLocks(
  api: LockApi,
  prefix: string,
  count: number,
  { sessions = 50, concurrency = 16 }: { sessions?: number; concurrency?: number } = {},
): Promise<BulkLocks> {
  const started = performance.now();
  const sessionIds: string[] = [];
  for (let i = 0; i < sessions; i += 1) sessionIds.push(await api.openSession(`bulk-${i}`, 300_000));
  const heartbeat = setInterval(() => {
    for (const id of sessionIds) void api.heartbeat(id).catch(() => undefined);
  }, 60_000);
  const keys = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(6, '0')}`);
  let next = 0;
  async function lane(): Promise<void> {
    while (next < keys.length) {
      const index = next++;
      await api.mustAcquire(keys[index]!, sessionIds[index % sessionIds.length]!, 600_000);
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return {
    keys,
    millis: performance.now() - started,
    async release() {
      clearInterval(heartbeat);
      for (const id of sessionIds) await api.closeSession(id);
    },
  };
}
