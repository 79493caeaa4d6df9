/**
 * Rolling upgrade (issue 25, SPEC "v3 — operating it without downtime"): two instances of the
 * previous release (built from git history, test/upgrade/previous-release.ts) serve one PostgreSQL,
 * or one etcd, under an SDK workload that knows both addresses; then each is replaced, one at a
 * time, by an instance of this checkout on the same address (SIGTERM, its drain, its exit, the new
 * one started) while the workload runs. The new instance migrates the shared schema while the other
 * old instance still serves on it.
 *
 * Clients of both releases run through it: half the workers use this checkout's SDK, half the previous
 * release's compiled one. Mid-roll both releases serve at once, an old instance is restarted beside the
 * new one (a rescheduled pod, or a roll rolled back), and audited actions go through both onto one chain.
 *
 * What must hold across the roll: no two grants of a key overlap, no holder writes with a token the
 * fenced resource has seen superseded (save after the previous release's give-back, roll-workload.ts), no request is answered with a 5xx other than the 503 a draining instance gives (which
 * the SDK sends on to the other address), every acquire ends (a grant, or not granted within its
 * budget; no error reaches the caller) and none hangs, no session is lost, and tokens keep rising: a
 * grant that completed before another was requested has the smaller token, per key and across keys,
 * on whichever release made either grant. Afterwards the audit chain verifies through either instance.
 * The workload runs until each phase has its count of grants (bounded per worker and by deadlines that
 * only bound a failing run): invariants, never latencies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { FLEET_STORES } from '../support/fleet-pair.js';
import { eventually } from '../support/http.js';
import { sharedPostgres } from '../support/server.js';
import { BIN, spawnServer, type ServerProcess } from '../support/server-process.js';
import { PREVIOUS_RELEASE_COMMIT, previousRelease, releaseVersion, type PreviousRelease } from './previous-release.js';
import * as newSdk from '../../client/index.js';
import { startRollWorkload, type RollEndpoint, type RollSdk } from './roll-workload.js';

// Long enough that a session outlives this shared, loaded machine's pauses between heartbeats.
const SESSION_TTL = 10_000;
/** Grants each phase waits for (a count, not a duration: a slow machine takes longer, not fewer). */
const GRANTS_PER_PHASE = 25;
/** Only bounds a failing run. */
const PHASE_DEADLINE = 90_000;

let release: PreviousRelease;
/** Clients of both releases run through the roll: this checkout's SDK and the previous release's compiled one. */
let sdks: RollSdk[];

beforeAll(async () => {
  if (FLEET_STORES.length === 0) return; // HOLDFAST_TEST_STORES named neither PostgreSQL nor etcd
  release = await previousRelease();
  const built = release.buildMillis === null ? 'cached build reused' : `built in ${(release.buildMillis / 1000).toFixed(1)} s`;
  const oldSdk = (await import(pathToFileURL(path.join(release.dir, 'dist/client/index.js')).href)) as Omit<RollSdk, 'name'>;
  sdks = [
    { name: 'new', LockClient: newSdk.LockClient, EndpointsTransport: newSdk.EndpointsTransport, FetchTransport: newSdk.FetchTransport },
    { name: 'old', LockClient: oldSdk.LockClient, EndpointsTransport: oldSdk.EndpointsTransport, FetchTransport: oldSdk.FetchTransport },
  ];
  console.log(`previous release ${PREVIOUS_RELEASE_COMMIT} (${release.commit}, version ${releaseVersion(release)}): ${built}, at ${release.dir}`);
}, 1_500_000);

describe.each(FLEET_STORES)('rolling upgrade from the previous release on %s', (store) => {
  const servers: ServerProcess[] = [];
  let etcd: EtcdNode | undefined;
  let workDir: string;
  let env: Record<string, string>;
  let operatorToken: string;

  beforeAll(async () => {
    workDir = mkdtempSync(path.join(tmpdir(), 'holdfast-roll-'));
    const tokensFile = path.join(workDir, 'tokens.json');
    operatorToken = randomBytes(32).toString('hex');
    writeFileSync(tokensFile, JSON.stringify([{ name: 'roll-operator', token: operatorToken, role: 'operator' }]), { mode: 0o600 });
    const auditKeyFile = path.join(workDir, 'audit.key');
    writeFileSync(auditKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    const common = {
      HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
      HOLDFAST_AUDIT_KEY_FILE: auditKeyFile,
      HOLDFAST_DRAIN_DELAY_MS: '1000',
      HOLDFAST_DATA_DIR: path.join(workDir, 'data'),
    };
    if (store === 'postgres') {
      env = { ...common, HOLDFAST_STORE: 'postgres', DATABASE_URL: await (await sharedPostgres()).createDatabase(), HOLDFAST_PG_POOL_SIZE: '8' };
    } else {
      etcd = await startEtcd();
      env = { ...common, HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(',') };
    }
  }, 120_000);

  afterAll(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    await etcd?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  const startOld = async (port?: number) => {
    const server = await spawnServer({ ...env, HOLDFAST_RUNTIME: 'dist' }, { nodeArgs: [release.bin, 'server'], ...(port ? { port } : {}) });
    servers.push(server);
    return server;
  };
  const startNew = async (port: number) => {
    const server = await spawnServer(env, { nodeArgs: [BIN, 'server'], port });
    servers.push(server);
    return server;
  };

  /**
   * An audited action through one instance: a lock taken on a side key and force-revoked by the operator (A3).
   * Entries appended by both releases, on one chain, while the other release also appends.
   */
  const revokeThrough = async (url: string, key: string): Promise<string> => {
    const post = (route: string, body: unknown, token: string) =>
      fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    const opened = (await (await post('/v1/sessions', { ttlMillis: 30_000, owner: 'roll-audit' }, operatorToken)).json()) as { sessionId: string; sessionToken: string };
    const granted = await post(`/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId: opened.sessionId, ttlMillis: 30_000 }, opened.sessionToken);
    const revoked = await post(`/v1/admin/locks/${encodeURIComponent(key)}/revoke`, { reason: 'rolling upgrade audit probe' }, operatorToken);
    const outcome = (await revoked.json()) as { outcome?: string };
    await fetch(`${url}/v1/sessions/${opened.sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${opened.sessionToken}` } });
    return `${granted.status} ${revoked.status} ${outcome.outcome ?? JSON.stringify(outcome)}`;
  };
  const verifyThrough = async (url: string) =>
    (await (await fetch(`${url}/v1/admin/audit/verify`, { headers: { authorization: `Bearer ${operatorToken}` } })).json()) as {
      ok: boolean;
      entries: number;
      problem?: string;
    };

  test('old, old → new, old → new, new under load: 0 overlaps, 0 stale writes, no 500, every acquire answered, tokens rising', async () => {
    const oldA = await startOld();
    const oldB = await startOld();
    const endpoints: RollEndpoint[] = [
      { label: 'A', url: oldA.url, release: 'old' },
      { label: 'B', url: oldB.url, release: 'old' },
    ];
    const workload = startRollWorkload({
      endpoints,
      sdks,
      workers: 8,
      keys: 3,
      keyPrefix: `roll-${store}`,
      sessionTtlMillis: SESSION_TTL,
      lockTtlMillis: 5_000,
      workMillis: 10,
      acquireBudgetMillis: 8_000,
      acquiresPerSession: 8,
      maxAcquiresPerWorker: 2_000,
    });
    const phases: string[] = [];
    const probes: string[] = [];
    const mixedVerify: [string, unknown][] = [];
    let firstStopAt = Number.POSITIVE_INFINITY;
    let allNewAt = Number.POSITIVE_INFINITY;
    const tokensBy = (since: number, until = Number.POSITIVE_INFINITY) =>
      workload.grants.filter((g) => g.grantedAt > since && g.grantedAt <= until).map((g) => g.token);
    try {
      const startedAt = Date.now();
      expect(await workload.grantsAfter(startedAt, GRANTS_PER_PHASE, PHASE_DEADLINE)).toBe(true);
      phases.push(`old+old: ${tokensBy(startedAt).length} grants`);
      probes.push(await revokeThrough(oldA.url, 'roll-audit/1'), await revokeThrough(oldB.url, 'roll-audit/2'));

      // One at a time: the instance drains (503 to new acquires, SDK moves on), exits, and this release takes its address.
      const olds = [oldA, oldB];
      for (const [index, endpoint] of endpoints.entries()) {
        const old = olds[index]!;
        const stoppedAt = Date.now();
        firstStopAt = Math.min(firstStopAt, stoppedAt);
        old.child.kill('SIGTERM');
        const exit = await old.exited;
        endpoint.release = 'new';
        const fresh = await startNew(old.port);
        const readyAt = Date.now();
        allNewAt = readyAt;
        expect(exit, `old ${endpoint.label} exits cleanly on SIGTERM`).toBe(0);
        const answersAtReady = new Map(workload.answers);
        expect(await workload.grantsAfter(readyAt, GRANTS_PER_PHASE, PHASE_DEADLINE)).toBe(true);
        if (index === 0) {
          // Mixed fleet: both releases serve at once (waits parked on one woken by releases on the other, tokens
          // drawn by both), not one after the other.
          await eventually(async () => {
            const served = workload.servedSince(answersAtReady);
            return (served.old ?? 0) >= GRANTS_PER_PHASE && (served.new ?? 0) >= GRANTS_PER_PHASE;
          }, PHASE_DEADLINE, 25);
          // One audit chain appended to by both releases, interleaved.
          probes.push(await revokeThrough(fresh.url, 'roll-audit/3'), await revokeThrough(oldB.url, 'roll-audit/4'));
          // The old release moves the head without sealing it: this release's verify says so (README "Rolling upgrades").
          mixedVerify.push(['new, after an old append', await verifyThrough(fresh.url)]);
          probes.push(await revokeThrough(fresh.url, 'roll-audit/5'));
          mixedVerify.push(['new', await verifyThrough(fresh.url)], ['old', await verifyThrough(oldB.url)]);
        }
        phases.push(
          `${endpoint.label} replaced (${readyAt - stoppedAt} ms from SIGTERM to the new instance ready, ${fresh.url}): ` +
            `${tokensBy(stoppedAt).length} grants since, 2xx answers by release since ${JSON.stringify(workload.servedSince(answersAtReady))}`,
        );
        if (index === 0) {
          // An old instance restarted mid-roll (a rescheduled pod, or a roll abandoned and rolled back) starts on the
          // expanded schema and serves beside this release.
          oldB.child.kill('SIGTERM');
          expect(await oldB.exited).toBe(0);
          olds[1] = await startOld(oldB.port);
          const restartedAt = Date.now();
          const answersAtRestart = new Map(workload.answers);
          await eventually(async () => (workload.servedSince(answersAtRestart).old ?? 0) >= GRANTS_PER_PHASE, PHASE_DEADLINE, 25);
          phases.push(`old B restarted beside new A: ${tokensBy(restartedAt).length} grants since`);
        }
      }
      probes.push(await revokeThrough(endpoints[0]!.url, 'roll-audit/6'), await revokeThrough(endpoints[1]!.url, 'roll-audit/7'));
    } finally {
      await workload.stop();
    }
    const finalVerify = [await verifyThrough(endpoints[0]!.url), await verifyThrough(endpoints[1]!.url)];

    console.log(
      `rolling upgrade on ${store}: ${phases.join('; ')}; ${workload.summary()}; audit probes ${JSON.stringify(probes)}, ` +
        `verify mid-roll ${JSON.stringify(mixedVerify)}, after ${JSON.stringify(finalVerify)}`,
    );

    // What this release answers for: the previous release's give-back (roll-workload.ts) is counted in the summary above.
    expect(workload.staleWrites()).toEqual([]);
    expect(workload.overlaps()).toEqual([]);
    expect(workload.tokenOrderViolations()).toEqual([]);
    // Across the roll: every grant this release made once it served alone is above every grant the old fleet made.
    const oldFleetTokens = workload.grants.filter((g) => g.grantedAt < firstStopAt).map((g) => g.token);
    const newFleetTokens = workload.grants.filter((g) => g.requestedAt > allNewAt).map((g) => g.token);
    expect(oldFleetTokens.length).toBeGreaterThan(0);
    expect(newFleetTokens.length).toBeGreaterThan(0);
    const highestOld = oldFleetTokens.reduce((a, b) => (a > b ? a : b));
    expect(newFleetTokens.filter((t) => t <= highestOld)).toEqual([]);
    // A 500 names its cause in that instance's `request_failed` lines (C4), shown with the failure.
    const failedRequests = servers.flatMap((s) => s.output().split('\n').filter((line) => line.includes('"request_failed"')).map((line) => `${s.url}: ${line.slice(0, 600)}`));
    expect(workload.serverErrors(), failedRequests.join('\n')).toEqual([]);
    const ends = Object.fromEntries(workload.acquireEnds);
    // Every acquire ended in a grant or not-granted within its budget: no hang, and no error surfaced to the caller
    // (a draining instance's 503 is sent on to the other address by the SDK, inside the call's budget).
    expect(Object.keys(ends).filter((end) => end !== 'granted' && end !== 'not_granted')).toEqual([]);
    expect([...workload.acquireEnds.values()].reduce((a, b) => a + b, 0)).toBe(workload.acquiresStarted);
    expect(Object.fromEntries(workload.otherErrors)).toEqual({});
    expect(workload.sessionsLost).toBe(0);
    expect(workload.handlesLost).toBe(0);
    // Audited actions through both releases, interleaved on one chain: every one applied, and the chain verifies.
    expect(probes).toEqual(Array.from({ length: 7 }, () => '200 200 REVOKED'));
    for (const verified of finalVerify) expect(verified).toMatchObject({ ok: true, entries: 7 });
    // Mid-roll, through this release: unsealed while the newest entry is the old release's, whole once this release appended.
    expect(mixedVerify[0]![1]).toMatchObject({ ok: false, brokenAt: '4', problem: expect.stringContaining('carries no seal') });
    expect(mixedVerify[1]![1]).toMatchObject({ ok: true, entries: 5 });
    // Clients of both SDKs were granted locks throughout.
    expect(workload.grantsBySdk.get('old') ?? 0).toBeGreaterThan(0);
    expect(workload.grantsBySdk.get('new') ?? 0).toBeGreaterThan(0);
    // Both releases served: the old one before and during the roll, this one after.
    const served = (release: string) => [...workload.answers].filter(([k]) => k.includes(`/${release} 2`)).reduce((n, [, c]) => n + c, 0);
    expect(served('old')).toBeGreaterThan(0);
    expect(served('new')).toBeGreaterThan(0);
  }, 600_000);
});
