/**
 * Resident memory of the real embedded server (`holdfast server`, a child process):
 * idle after its first start (initdb ran in it), idle after a restart on the same data
 * dir, and after 5,000 sessions with 2,500 held locks. `npx tsx bench/embedded-memory.ts`
 *
 * The runtime matters: the package's bin runs the compiled build (dist/, `npm run build`; what a
 * production install and the container run) when it is current, else the sources through tsx,
 * whose loader and transform cache add tens of MB. HOLDFAST_RUNTIME=dist|tsx picks one; the
 * figures say which ran.
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
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}; runtime ${process.env.HOLDFAST_RUNTIME ?? 'bin default (dist when current, else tsx)'}`);
  const firstStartAt = Date.now();
  let server = await spawnServer(env);
  const firstStartMillis = Date.now() - firstStartAt;
  await settle();
  console.log(`first start (initdb in a child process, ready in ${firstStartMillis} ms), idle: ${rssMb(server.child.pid!)} MB`);
  await stop(server);
  const restartAt = Date.now();
  server = await spawnServer(env);
  const restartMillis = Date.now() - restartAt;
  await settle();
  console.log(`restart on the same data dir (ready in ${restartMillis} ms), idle: ${rssMb(server.child.pid!)} MB`);

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
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  connections.forEach((c) => c.close());
  await stop(server);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
