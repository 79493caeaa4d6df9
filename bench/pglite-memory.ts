/**
 * Where the embedded store's memory goes: opens the embedded store (a real data dir)
 * under one PGlite configuration per child process and prints RSS idle and after
 * 5,000 sessions with 2,500 held locks. `npx tsx bench/pglite-memory.ts`
 * (a child runs `npx tsx bench/pglite-memory.ts CONFIG_NAME`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PgliteDatabase } from '../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../lock/store/sql/sql-store.js';

const DEFAULT_PARAMS = PGlite.defaultStartParams as string[];
const gucs = (...pairs: string[]) => [...DEFAULT_PARAMS, ...pairs.flatMap((p) => ['-c', p])];

/**
 * initialMemory is not a knob: pglite.wasm declares 2048 pages (128 MB) as its minimum (a smaller
 * Memory fails to link), and pages never touched are not resident anyway.
 */
export const CONFIGS: Record<string, { initialMemory?: number; startParams?: string[]; nodeFlags?: string[] }> = {
  // PGlite's own defaults (shared_buffers 128 MB); the store now passes shared_buffers=16MB.
  'pglite-default': { startParams: [...DEFAULT_PARAMS] },
  'shared_buffers=16MB': { startParams: gucs('shared_buffers=16MB') },
  'shared_buffers=8MB': { startParams: gucs('shared_buffers=8MB') },
  'shared_buffers=16MB,max_connections=4': { startParams: gucs('shared_buffers=16MB', 'max_connections=4') },
  'shared_buffers=8MB,max_connections=4,wal_buffers=1MB,work_mem=1MB,temp_buffers=1MB,maintenance_work_mem=4MB': {
    startParams: gucs('shared_buffers=8MB', 'max_connections=4', 'wal_buffers=1MB', 'work_mem=1MB', 'temp_buffers=1MB', 'maintenance_work_mem=4MB'),
  },
  'shared_buffers=32MB': { startParams: gucs('shared_buffers=32MB') },
  // V8 compiles pglite.wasm with Liftoff, then TurboFan for hot functions; TurboFan's compile zones are freed
  // to malloc, which keeps them. Liftoff only: less resident, slower WASM.
  'shared_buffers=16MB, node --liftoff-only': { startParams: gucs('shared_buffers=16MB'), nodeFlags: ['--liftoff-only'] },
};

const mb = () => Math.round(process.memoryUsage().rss / 1048576);

async function child(name: string) {
  const dir = process.argv[4] ?? mkdtempSync(path.join(tmpdir(), 'holdfast-mem-'));
  try {
    // A server restarting on its data dir (initdb ran before, in another process).
    if (process.argv[3] !== 'fresh') {
      execFileSync('node', ['--import', 'tsx', 'bench/pglite-memory.ts', name, 'fresh', dir], { stdio: 'inherit' });
    }
    const { nodeFlags: _flags, ...pglite } = CONFIGS[name]!;
    const db = await PgliteDatabase.open(path.join(dir, 'pgdata'), undefined, { ownerDir: dir, pglite });
    const store = new SqlLockStore(db, 'embedded');
    await store.init();
    if (process.argv[3] === 'fresh') return void (await store.close());
    globalThis.gc?.();
    const idle = mb();
    const sessions = [];
    for (let i = 0; i < 5000; i++) {
      const credential = { sessionId: `s-${String(i).padStart(5, '0')}`, tokenHash: 'h'.repeat(64) };
      sessions.push(store.openSession({ ...credential, owner: `owner-${i}`, ttlMillis: 600_000 }).then(() => credential));
    }
    const cpuAt = process.cpuUsage();
    const opened = await Promise.all(sessions);
    await Promise.all(opened.slice(0, 2500).map((s, i) => store.tryAcquire({ key: `jobs/${i}`, session: s, ttlMillis: 600_000 })));
    const beats = Date.now();
    for (let i = 0; i < 5000; i++) await store.heartbeat(opened[i % opened.length]!);
    const heartbeatMicros = ((Date.now() - beats) * 1000) / 5000;
    const cpu = process.cpuUsage(cpuAt);
    globalThis.gc?.();
    const loaded = mb();
    const buffers = await db.query<{ setting: string; unit: string }>(`SELECT setting, unit FROM pg_settings WHERE name = 'shared_buffers'`);
    const heap = Math.round(process.memoryUsage().arrayBuffers / 1048576);
    console.log(JSON.stringify({
      name,
      idleRssMb: idle,
      loadedRssMb: loaded,
      arrayBuffersMb: heap,
      sharedBuffers: `${buffers[0]?.setting}x${buffers[0]?.unit}`,
      // 5,000 opens + 2,500 acquires + 5,000 sequential heartbeats: the CPU price of a configuration.
      loadCpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
      sequentialHeartbeatMicros: Math.round(heartbeatMicros),
    }));
    await store.close();
  } finally {
    if (process.argv[3] !== 'fresh') rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2]) {
  await child(process.argv[2]);
} else {
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (const name of Object.keys(CONFIGS)) {
    const flags = CONFIGS[name]!.nodeFlags ?? [];
    const out = execFileSync('node', ['--expose-gc', ...flags, '--import', 'tsx', 'bench/pglite-memory.ts', name], { encoding: 'utf8' });
    process.stdout.write(out);
  }
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
}
