/**
 * Fault (f): the embedded server SIGKILLed under load, restarted on the same
 * data directory: `holdfast audit --verify` passes, a lock held across the
 * kill keeps its holder and token, new tokens are above every token granted
 * before, and the fenced resource refused nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { startWorkload } from '../support/fault-workload.js';
import { eventually, httpClient } from '../support/http.js';
import { BIN, spawnServer, type ServerProcess } from '../support/server-process.js';

const root = mkdtempSync(path.join(tmpdir(), 'holdfast-embedded-kill-'));
const dataDir = path.join(root, 'data');
const started: ServerProcess[] = [];
afterAll(() => {
  for (const server of started) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

function auditVerify(url: string) {
  const result = spawnSync(process.execPath, [BIN, 'audit', '--verify'], {
    env: { ...process.env, HOLDFAST_URL: url, HOLDFAST_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

test('SIGKILL the embedded server under load: restart on the same directory with state and audit intact', async () => {
  const env = { HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dataDir };
  const first = await spawnServer(env);
  started.push(first);
  const api = httpClient(first.url);
  const operator = JSON.parse(readFileSync(path.join(dataDir, 'admin-tokens.json'), 'utf8'))[0].token as string;
  const keeper = (await api.openSession({ ttlMillis: 300_000, owner: 'keeper' })).body.sessionId as string;
  const kept = (await api.acquire('embedded-kill/kept', { sessionId: keeper, ttlMillis: 600_000 })).body;
  // Audited actions before the kill, so the chain has entries to verify.
  await api.acquire('embedded-kill/revoked', { sessionId: keeper, ttlMillis: 600_000 });
  expect((await api.admin(operator).revoke('embedded-kill/revoked', { reason: 'fault test' })).status).toBe(200);

  const workload = startWorkload({
    urls: [first.url],
    workers: 4,
    keys: 3,
    keyPrefix: 'embedded-kill',
    sessionTtlMillis: 15_000,
    lockTtlMillis: 10_000,
    workMillis: 5,
    acquireBudgetMillis: 2_000,
  });
  await eventually(async () => workload.grants.length >= 30, 60_000, 20);
  const killedAt = Date.now();
  first.child.kill('SIGKILL');
  await first.exited;
  await workload.stop();
  const highestBefore = workload.grants.reduce((max, g) => (g.token > max ? g.token : max), BigInt(kept.fencingToken));

  const second = await spawnServer(env);
  started.push(second);
  const restartedIn = Date.now() - killedAt;
  const again = httpClient(second.url);
  const verify = auditVerify(second.url);
  const keptAfter = (await again.read('embedded-kill/kept')).body;
  const fresh = (await again.openSession({})).body.sessionId as string;
  const next = (await again.acquire('embedded-kill/after', { sessionId: fresh })).body;
  const audit = (await again.admin(operator).audit('?limit=100')).body.items as { action: string; target: string }[];
  console.log(
    `embedded kill: ${workload.grants.length} grants before the kill (highest token ${highestBefore}); restarted and ready in ${restartedIn} ms; ` +
      `audit --verify exit ${verify.status}: ${verify.output.split('\n')[0]}; kept lock ${JSON.stringify(keptAfter)}; next token ${next.fencingToken}; ` +
      workload.summary(),
  );
  expect(verify.status).toBe(0);
  expect(audit.some((e) => e.target?.includes('embedded-kill/revoked'))).toBe(true);
  expect(keptAfter).toMatchObject({ held: true, sessionId: keeper, fencingToken: kept.fencingToken });
  expect(BigInt(next.fencingToken)).toBeGreaterThan(highestBefore);
  expect(workload.recorder.rejected).toEqual([]);
  expect(workload.overlaps()).toEqual([]);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
}, 900_000);
