/**
 * Resident memory of the real embedded server (`holdfast server`, a child process):
 * idle after its first start (initdb ran in it), idle after a restart on the same data
 * dir, and after 5,000 sessions with 2,500 held locks. `npx tsx bench/embedded-memory.ts`
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { spawnServer, type ServerProcess } from '../test/support/server-process.js';
import { LeanHttpConnection } from './lib/lean-http.js';

const rssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
const settle = () => new Promise((r) => setTimeout(r, 5000));

async function stop(server: ServerProcess) {
  server.child.kill('SIGTERM');
  await server.exited;
}

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-embedded-mem-'));
const env = { HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dir, HOLDFAST_SWEEP_INTERVAL_MS: '1000' };
try {
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  let server = await spawnServer(env);
  await settle();
  console.log(`first start (initdb in process), idle: ${rssMb(server.child.pid!)} MB`);
  await stop(server);
  server = await spawnServer(env);
  await settle();
  console.log(`restart on the same data dir, idle: ${rssMb(server.child.pid!)} MB`);

  const connections = await Promise.all(Array.from({ length: 16 }, () => LeanHttpConnection.open(server.url)));
  let next = 0;
  await Promise.all(
    connections.map(async (c) => {
      for (let i = next++; i < 5000; i = next++) {
        const opened = (await c.request('POST', '/v1/sessions', { owner: `w-${i}`, ttlMillis: 300_000 })).body as { sessionId: string; sessionToken: string };
        if (i < 2500) {
          const answer = await c.request('POST', `/v1/locks/${encodeURIComponent(`jobs/${i}`)}/acquire`, { sessionId: opened.sessionId, ttlMillis: 600_000 }, opened.sessionToken);
          if (answer.status !== 200) throw new Error(`acquire answered ${answer.status}`);
        }
      }
    }),
  );
  await settle();
  console.log(`after 5,000 sessions and 2,500 held locks: ${rssMb(server.child.pid!)} MB`);
  connections.forEach((c) => c.close());
  await stop(server);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
