/**
 * Fault (a): a holder process SIGSTOPped past its lock and session TTL, then
 * SIGCONT. Meanwhile another session takes the lock (a higher token) and
 * writes. After the resume the paused holder's writes carry its old token and
 * the fenced resource refuses every one of them; its handle reports lost.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { FencedResourceRecorder } from '../support/fenced-resource.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

// The holder must keep its session on a loaded machine until the pause (else the store no longer lists it and
// holderExpirySeen below is 0). It heartbeats every TTL/3 and its SDK counts the session lost at send + TTL - 1 s,
// each request timing out at min(TTL/4, half the time left). At 4 s (heartbeat 1.33 s, deadline 3 s, timeout
// 833 ms) a stall of ~1.7 s lost it, and a loaded CI run lost it before SIGSTOP. At 10 s (heartbeat 3.33 s,
// deadline 9 s, timeout 2.5 s) it survives a ~5.7 s stall of its process. The lock's 15 s TTL (renewed every 5 s,
// deadline 14 s) keeps the 1.5 ratio: the session's lapse, not the lock's, is what frees it. The pause lasts both
// TTLs (25 s; 10 s before), so the test takes ~30 s plus the server's start.
const SESSION_TTL = 10_000;
const LOCK_TTL = 15_000;
const HOLDER = path.resolve(import.meta.dirname, 'support/holder-process.ts');
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ store: 'postgres', env: { DATABASE_URL: await (await sharedPostgres()).createDatabase() } });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

interface Report {
  event: string;
  token: string;
  lost: boolean;
  sessionLost: boolean;
  at: number;
}

test('SIGSTOP a holder past its TTLs, SIGCONT: its old-token writes are refused after a newer holder wrote; its handle reports lost', async () => {
  const key = 'paused/resource';
  const recorder = new FencedResourceRecorder();
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, server.url, key, String(SESSION_TTL), String(LOCK_TTL)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const reports: Report[] = [];
  let buffer = '';
  const accepted: { token: string; ok: boolean; lost: boolean; afterResume: boolean }[] = [];
  let resumedAt = 0;
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const report = JSON.parse(buffer.slice(0, nl)) as Report;
      buffer = buffer.slice(nl + 1);
      reports.push(report);
      // The holder's write reaches the resource when the test reads it.
      if (report.event === 'write') accepted.push({ token: report.token, ok: recorder.write(key, report.token), lost: report.lost, afterResume: resumedAt > 0 });
    }
  });
  try {
    const granted = await eventually(async () => reports.find((r) => r.event === 'granted'), 60_000, 20);
    await eventually(async () => accepted.length >= 3, 30_000, 20);
    const api = httpClient(server.url);
    const viewer = api.admin(server.viewerToken);
    const holderSessionId = (await api.read(key)).body.sessionId as string;
    /** The holder's session expiry as the store has it (store clock; heartbeats only move it later), if still live. */
    const holderExpiresAt = async () =>
      ((await viewer.listSessions('?limit=1000')).body.items as { sessionId: string; expiresAt: number }[]).find((x) => x.sessionId === holderSessionId)
        ?.expiresAt;
    const seenBeforeStop = await holderExpiresAt();

    child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    // A heartbeat in flight at the stop may still land: read again (an expiry only ever moves later).
    const seenAfterStop = await holderExpiresAt();
    const holderExpirySeen = Math.max(seenBeforeStop ?? 0, seenAfterStop ?? 0);
    // A rival takes the lock once the holder's session and lock have expired on the store's clock.
    const rival = (await api.openSession({ ttlMillis: 30_000 })).body.sessionId as string;
    const rivalGrant = await eventually(async () => {
      const answer = await api.acquire(key, { sessionId: rival });
      return answer.status === 200 ? answer.body : undefined;
    }, 60_000, 100);
    const rivalAfter = Date.now() - stoppedAt;
    expect(recorder.write(key, rivalGrant.fencingToken)).toBe(true);
    // Paused past both TTLs, as the brief asks, before the resume.
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + LOCK_TTL + SESSION_TTL - Date.now())));

    resumedAt = Date.now();
    child.kill('SIGCONT');
    // Quiet machine: the handle reports lost ~0.1 s after SIGCONT, 5 writes after ~0.5 s; these deadlines only bound a failure.
    const lostReport = await eventually(async () => reports.find((r) => r.at >= resumedAt && r.lost && r.sessionLost), 30_000, 20);
    await eventually(async () => accepted.filter((w) => w.afterResume).length >= 5, 30_000, 20);

    const afterResume = accepted.filter((w) => w.afterResume);
    const oldTokenAccepted = afterResume.filter((w) => w.token === granted.token && w.ok);
    console.log(
      `paused holder: token ${granted.token}, rival granted token ${rivalGrant.fencingToken} ${rivalAfter} ms after SIGSTOP, ` +
        `${rivalGrant.grantedAt - holderExpirySeen} ms after the holder's session expiry the store showed (${seenBeforeStop ? 'seen' : 'NOT seen'} before the stop); ` +
        `resumed after ${resumedAt - stoppedAt} ms; handle reported lost ${lostReport.at - resumedAt} ms after SIGCONT; ` +
        `writes after resume: ${afterResume.length}, accepted ${afterResume.filter((w) => w.ok).length}, refused ${afterResume.filter((w) => !w.ok).length}; ` +
        `fence refused ${recorder.rejected.length} in all`,
    );
    expect(BigInt(rivalGrant.fencingToken)).toBeGreaterThan(BigInt(granted.token));
    // Not before the holder's session expired, by the store's own clock and record: a starved holder's late heartbeat
    // makes that earlier, so a bound from the test's clock (stop time - one heartbeat interval) raced the machine.
    expect(holderExpirySeen).toBeGreaterThan(0);
    expect(rivalGrant.grantedAt).toBeGreaterThanOrEqual(holderExpirySeen);
    expect(oldTokenAccepted).toEqual([]);
    expect(afterResume.length).toBeGreaterThanOrEqual(5);
    expect(recorder.rejected.length).toBeGreaterThanOrEqual(afterResume.length);
    expect(lostReport.lost).toBe(true);
    // The rival still holds it: the resumed holder took nothing back.
    expect((await api.read(key)).body).toMatchObject({ held: true, sessionId: rival, fencingToken: rivalGrant.fencingToken });
  } finally {
    child.kill('SIGKILL');
  }
}, 300_000);
