/**
 * Resident memory of the real embedded server (`holdfast server`, a child process):
 * idle after its first start (initdb runs in a short-lived child of it), idle after a restart on
 * the same data dir, and after 5,000 sessions with 2,500 held locks. Then the shares: a bare
 * `node`, node with only PGlite open on that data dir, and the same server on a PostgreSQL store
 * (no PGlite), all idle. `npx tsx bench/embedded-memory.ts`
 *
 * The runtime matters: the package's bin runs the compiled build (dist/, `npm run build`; what a
 * production install and the container run) when it is current, else the sources through tsx,
 * whose loader and transform cache add tens of MB. HOLDFAST_RUNTIME=dist|tsx picks one; the
 * figures say which ran.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { startPostgres } from '../test/support/postgres.js';
import { spawnServer, type ServerProcess } from '../test/support/server-process.js';
import { EMBEDDED_START_PARAMS } from '../lock/store/sql/pglite-database.js';
import { LeanHttpConnection } from './lib/lean-http.js';

const rssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
const settle = () => new Promise((r) => setTimeout(r, 5000));
const load = () => `load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`;

async function stop(server: ServerProcess) {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** RSS of a plain `node -e` child after `script` ran and 5 s passed (`script` may be async). */
function nodeRssMb(script: string, args: string[] = []): number {
  const wrapped = `Promise.resolve((async () => { ${script} })()).then((keep) => setTimeout(() => {
    process.stdout.write(require('fs').readFileSync('/proc/self/status', 'utf8').match(/VmRSS:\\s+(\\d+)/)[1]);
    return keep && keep.close && keep.close();
  }, 5000));`;
  return Math.round(Number(execFileSync(process.execPath, ['-e', wrapped, ...args], { encoding: 'utf8' })) / 1024);
}

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-embedded-mem-'));
const env = { HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dir, HOLDFAST_SWEEP_INTERVAL_MS: '1000' };
try {
  console.log(`${load()}; runtime ${process.env.HOLDFAST_RUNTIME ?? 'bin default (dist when current, else tsx)'}`);
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
  connections.forEach((c) => c.close());
  await stop(server);
  console.log(load());

  // ---- the shares -------------------------------------------------------------------------------
  console.log(`bare node, idle: ${nodeRssMb('')} MB`);
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const pgliteOnly = nodeRssMb(
    `const [p, d, s] = JSON.parse(process.argv[1]); const db = await require(p).PGlite.create({ dataDir: d, startParams: s }); await db.query('SELECT 1'); return db;`,
    [JSON.stringify([pglite, path.join(dir, 'pgdata'), EMBEDDED_START_PARAMS])],
  );
  console.log(`node with only PGlite open on that data dir (the store's start params), idle: ${pgliteOnly} MB`);
  const postgres = await startPostgres();
  try {
    server = await spawnServer({ HOLDFAST_STORE: 'postgres', DATABASE_URL: await postgres.createDatabase(), HOLDFAST_SWEEP_INTERVAL_MS: '1000' });
    await settle();
    console.log(`the same server on a PostgreSQL store (no PGlite), idle: ${rssMb(server.child.pid!)} MB`);
    await stop(server);
  } finally {
    await postgres.stop();
  }
  console.log(load());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
