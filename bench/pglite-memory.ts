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

export const CONFIGS: Record<string, { initialMemory?: number; startParams?: string[] }> = {
  default: {},
  'shared_buffers=16MB': { startParams: gucs('shared_buffers=16MB') },
  'initialMemory=64MB': { initialMemory: 64 * 1024 * 1024 },
  'initialMemory=64MB,shared_buffers=16MB': { initialMemory: 64 * 1024 * 1024, startParams: gucs('shared_buffers=16MB') },
  'initialMemory=64MB,shared_buffers=8MB,wal_buffers=1MB,work_mem=1MB,temp_buffers=1MB': {
    initialMemory: 64 * 1024 * 1024,
    startParams: gucs('shared_buffers=8MB', 'wal_buffers=1MB', 'work_mem=1MB', 'temp_buffers=1MB'),
  },
};

const mb = () => Math.round(process.memoryUsage().rss / 1048576);

async function child(name: string) {
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-mem-'));
  try {
    const db = await PgliteDatabase.open(path.join(dir, 'pgdata'), undefined, { ownerDir: dir, pglite: CONFIGS[name]! });
    const store = new SqlLockStore(db, 'embedded');
    await store.init();
    globalThis.gc?.();
    const idle = mb();
    const sessions = [];
    for (let i = 0; i < 5000; i++) {
      const credential = { sessionId: `s-${String(i).padStart(5, '0')}`, tokenHash: 'h'.repeat(64) };
      sessions.push(store.openSession({ ...credential, owner: `owner-${i}`, ttlMillis: 600_000 }).then(() => credential));
    }
    const opened = await Promise.all(sessions);
    await Promise.all(opened.slice(0, 2500).map((s, i) => store.tryAcquire({ key: `jobs/${i}`, session: s, ttlMillis: 600_000 })));
    globalThis.gc?.();
    const loaded = mb();
    const heap = Math.round(process.memoryUsage().arrayBuffers / 1048576);
    console.log(JSON.stringify({ name, idleRssMb: idle, loadedRssMb: loaded, arrayBuffersMb: heap }));
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2]) {
  await child(process.argv[2]);
} else {
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (const name of Object.keys(CONFIGS)) {
    const out = execFileSync('node', ['--expose-gc', '--import', 'tsx', 'bench/pglite-memory.ts', name], { encoding: 'utf8' });
    process.stdout.write(out);
  }
}
