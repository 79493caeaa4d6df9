/**
 * Fault (b): PostgreSQL restarted under load (pg_ctl stop -m fast, and -m
 * immediate: connections cut mid-transaction, the case that used to crash the
 * server), with a real `holdfast server` process. While it is down every L4
 * answers 503 (no 500, no hang); grants resume within 5 s of its return without
 * restarting Holdfast; a grant acknowledged before the restart is still held
 * with its token; the fenced resource refuses nothing and no grants overlap.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startWorkload } from '../support/fault-workload.js';
import { eventually, httpClient } from '../support/http.js';
import { pgStartArgs, runPgProgram, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';

const DOWN_MILLIS = 2500;
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
  test('503 while down, no 500, no hang; grants within 5 s of its return; acknowledged grants kept', async () => {
    const api = httpClient(server.url);
    const keeper = (await api.openSession({ ttlMillis: 60_000, owner: 'keeper' })).body.sessionId as string;
    const kept = (await api.acquire(`restart-${mode}/kept`, { sessionId: keeper, ttlMillis: 60_000 })).body;
    expect(kept.fencingToken).toMatch(/^\d+$/);

    const workload = startWorkload({
      urls: [server.url],
      workers: 4,
      keys: 2,
      keyPrefix: `restart-${mode}`,
      sessionTtlMillis: 15_000,
      lockTtlMillis: 10_000,
      workMillis: 10,
      acquireBudgetMillis: 3_000,
    });
    // A raw prober: every answer's status and time, so a hang or a 500 cannot hide in SDK retries.
    const probe = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
    const probes: { at: number; status: number | 'failed'; millis: number }[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const at = Date.now();
        const answer = await api.acquire(`restart-${mode}/probe`, { sessionId: probe, ttlMillis: 1000 }).catch(() => undefined);
        probes.push({ at, status: answer?.status ?? 'failed', millis: Date.now() - at });
        if (answer?.status === 200) await api.release(`restart-${mode}/probe`, { sessionId: probe, fencingToken: answer.body.fencingToken }).catch(() => {});
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await eventually(async () => workload.grants.length >= 20, 30_000, 20);

    const stoppedAt = Date.now();
    runPgProgram('pg_ctl', ['-D', cluster.dataDir, '-m', mode, '-w', 'stop']);
    await new Promise((r) => setTimeout(r, DOWN_MILLIS));
    const startedAt = Date.now();
    runPgProgram('pg_ctl', pgStartArgs(cluster.dataDir, cluster.port));
    const returnedAt = Date.now();
    const grantAgain = await eventually(async () => workload.firstGrantAfter(returnedAt), 15_000, 20).catch(() => undefined);
    const probeAgain = await eventually(async () => probes.find((p) => p.at > returnedAt && p.status === 200)?.at, 15_000, 20).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1000));
    probing = false;
    await prober;
    await workload.stop();

    const keptAfter = (await api.read(`restart-${mode}/kept`)).body;
    const renewed = await api.renew(`restart-${mode}/kept`, { sessionId: keeper, fencingToken: kept.fencingToken });
    const whileDown = probes.filter((p) => p.at > stoppedAt + 200 && p.at + p.millis < startedAt);
    const statuses = new Map<string, number>();
    for (const p of probes) statuses.set(String(p.status), (statuses.get(String(p.status)) ?? 0) + 1);
    const slowest = Math.max(...probes.map((p) => p.millis));
    console.log(
      `postgres ${mode} restart: down ${startedAt - stoppedAt} ms, start took ${returnedAt - startedAt} ms; ` +
        `probe L4s ${JSON.stringify(Object.fromEntries(statuses))} (while down: ${JSON.stringify(whileDown.map((p) => p.status))}), slowest ${slowest} ms; ` +
        `first workload grant ${grantAgain === undefined ? 'NEVER' : `${grantAgain - returnedAt} ms`}, first probe grant ${probeAgain === undefined ? 'NEVER' : `${probeAgain - returnedAt} ms`} after PostgreSQL returned; ` +
        `kept lock ${keptAfter.held ? `held, token ${keptAfter.fencingToken}` : 'NOT held'}, renew ${renewed.status}; ` +
        workload.summary(),
    );
    expect(server.child.exitCode).toBeNull(); // the server never crashed
    expect([...statuses.keys()].filter((s) => !['200', '409', '503'].includes(s))).toEqual([]);
    expect([...workload.requests.keys()].filter((k) => !/ (200|201|204|409|503)$/.test(k))).toEqual([]);
    expect(whileDown.length).toBeGreaterThan(0);
    expect(whileDown.every((p) => p.status === 503)).toBe(true);
    expect(slowest).toBeLessThan(4000);
    expect(grantAgain).toBeDefined();
    expect(grantAgain! - returnedAt).toBeLessThan(5000);
    expect(probeAgain! - returnedAt).toBeLessThan(5000);
    expect(keptAfter).toMatchObject({ held: true, sessionId: keeper, fencingToken: kept.fencingToken });
    expect(renewed.status).toBe(200);
    expect(workload.recorder.rejected).toEqual([]);
    expect(workload.overlaps()).toEqual([]);
  }, 90_000);
});
