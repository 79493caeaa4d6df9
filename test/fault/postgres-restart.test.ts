/**
 * Fault (b), issue 20: PostgreSQL stopped under load (pg_ctl stop -m fast, and -m
 * immediate: connections cut mid-transaction), then started again, with a real
 * `holdfast server` process. While the server counts its store down, every L4 is
 * answered 503 NOT_LEADER at once; the first grant comes within 1 s of the store's
 * return; a grant acknowledged before the stop is still held with its token; the
 * SDK workload ends its acquires with NotLeaderError, never an unanswered request;
 * nothing overlaps and the fenced resource refuses nothing; the server never exits.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { pgStartArgs, runPgProgram, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';
import { expectOutageHandled, runStoreOutage } from '../support/store-outage.js';

let cluster: PostgresCluster;
let server: ServerProcess;

beforeAll(async () => {
  cluster = await startPostgres();
  server = await spawnServer({ HOLDFAST_STORE: 'postgres', DATABASE_URL: await cluster.createDatabase(), HOLDFAST_PG_POOL_SIZE: '8' });
}, 120_000);
afterAll(async () => {
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  await cluster?.stop();
});

describe.each(['fast', 'immediate'])('pg_ctl stop -m %s, then start', (mode) => {
  test('503 at once while down; a grant within 1 s of its return; acknowledged grants kept; no overlap', async () => {
    const report = await runStoreOutage({
      server,
      label: `restart-${mode}`,
      breakStore: () => runPgProgram('pg_ctl', ['-D', cluster.dataDir, '-m', mode, '-w', 'stop']),
      downMillis: 5_000, // ~150 L4s while down, so the p99 is not just the slowest one
      // pg_ctl -w returns once PostgreSQL accepts connections.
      restoreStore: () => runPgProgram('pg_ctl', pgStartArgs(cluster.dataDir, cluster.port)),
    });
    console.log(`postgres ${mode} stop: ${report.line}`);
    expectOutageHandled(report, server, expect);
  }, 180_000);
});
