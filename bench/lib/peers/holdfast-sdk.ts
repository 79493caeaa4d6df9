/**
 * Holdfast as its users take locks: the TypeScript SDK (`client/index.ts`) against a real
 * `holdfast server` process, one LockClient per cell (as one service process would have) and
 * one session per worker (reentrancy is per session, so workers that must exclude each other
 * need their own). Hot cells wait server-side (`waitMillis`), the SDK's way of queueing.
 */
import { AcquirePolicy, LockClient, type LockSession } from '../../../client/index.js';
import { processCpuMillis } from '../cpu.js';
import type { CellMode, PeerLoad, PeerSystem, SystemId } from './system.js';

export interface HoldfastSdkOptions {
  id: Extract<SystemId, 'holdfast-embedded' | 'holdfast-postgres' | 'holdfast-etcd'>;
  label: string;
  url: string;
  serverPid: number;
  /** The store's own processes (PostgreSQL cluster, etcd member), by role; none for embedded (PGlite runs in the server). */
  storeCpuMillis: () => Record<string, number>;
  /** Hot cells: one acquire's whole budget, spent waiting on the server. */
  waitBudgetMillis: number;
}

export function holdfastSdkSystem(options: HoldfastSdkOptions): PeerSystem {
  return {
    id: options.id,
    label: options.label,
    serverCpuMillis: () => ({ 'holdfast server': processCpuMillis(options.serverPid), ...options.storeCpuMillis() }),
    async open(workers: number, mode: CellMode): Promise<PeerLoad> {
      // Uncontended cells use the SDK's default policy (no server-side wait); hot ones wait on the
      // server for up to the budget, in one L4 when the budget allows.
      const defaultPolicy =
        mode === 'hot' ? new AcquirePolicy({ waitMillis: options.waitBudgetMillis, totalBudgetMillis: options.waitBudgetMillis }) : AcquirePolicy.DEFAULT;
      const client = new LockClient({ baseUrl: options.url, defaultPolicy });
      const sessions: LockSession[] = await Promise.all(
        Array.from({ length: workers }, (_, worker) => client.openSession({ owner: `peers-bench-${worker}` })),
      );
      return {
        async acquire(worker, key) {
          const session = sessions[worker]!;
          const handle = await session.acquire(key);
          return handle === null ? null : { release: () => session.release(handle) };
        },
        async close() {
          await Promise.all(sessions.map((session) => session.close()));
        },
      };
    },
  };
}
