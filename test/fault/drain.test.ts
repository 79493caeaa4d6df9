/**
 * Graceful drain (issue 11): SIGTERM a real `holdfast server` under load. For
 * HOLDFAST_DRAIN_DELAY_MS it stays up but drains: /readyz answers 503 at once,
 * new L4s 503 NOT_LEADER with Retry-After (counted as outcome `draining`, not
 * `not_leader`, so S1 and HoldfastNotLeaderAnswers ignore them), holders can
 * still release; then the listener closes and the process exits 0.
 */
import { expect, test } from 'vitest';
import { FencedResourceRecorder } from '../support/fenced-resource.js';
import { httpClient } from '../support/http.js';
import { spawnServer } from '../support/server-process.js';
import { sharedPostgres } from '../support/server.js';

const DRAIN_MILLIS = 2000;

function counterOf(metrics: string, outcome: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith('lock_acquire_seconds_count{') && l.includes(`outcome="${outcome}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

test('SIGTERM drains: /readyz 503 first, L4 503 + Retry-After counted as draining, releases served, exit 0', async () => {
  const databaseUrl = await (await sharedPostgres()).createDatabase();
  const server = await spawnServer({ HOLDFAST_STORE: 'postgres', DATABASE_URL: databaseUrl, HOLDFAST_DRAIN_DELAY_MS: String(DRAIN_MILLIS) });
  const api = httpClient(server.url);
  const holder = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
  const held = (await api.acquire('drain/held', { sessionId: holder, ttlMillis: 60_000 })).body;

  const recorder = new FencedResourceRecorder();
  const statuses = new Map<string, number>();
  const count = (label: string) => statuses.set(label, (statuses.get(label) ?? 0) + 1);
  let signalledAt = 0;
  let stop = false;
  const unexpected: string[] = [];
  const drainAnswers: { status: number; code: string; retryAfter: string | null }[] = [];
  const loop = async (i: number) => {
    const session = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
    while (!stop) {
      let grant;
      try {
        grant = await api.acquire(`drain/load-${i}`, { sessionId: session });
      } catch {
        if (!signalledAt) unexpected.push('connection failed before SIGTERM');
        return; // the listener closed after the drain delay
      }
      count(`${signalledAt ? 'after' : 'before'} ${grant.status}`);
      if (grant.status === 200) {
        recorder.write(`drain/load-${i}`, grant.body.fencingToken);
        await api.release(`drain/load-${i}`, { sessionId: session, fencingToken: grant.body.fencingToken }).catch(() => {});
      } else if (grant.status === 503 && signalledAt) {
        drainAnswers.push({ status: grant.status, code: grant.body.error.code, retryAfter: grant.headers.get('retry-after') });
        await new Promise((r) => setTimeout(r, 50));
      } else {
        unexpected.push(`${grant.status} ${JSON.stringify(grant.body)}`);
      }
    }
  };
  const loops = Array.from({ length: 4 }, (_, i) => loop(i));
  while (recorder.accepted < 40) await new Promise((r) => setTimeout(r, 20));

  signalledAt = Date.now();
  server.child.kill('SIGTERM');
  // /readyz turns 503 before anything else changes for the load balancer.
  let readyAt = 0;
  for (;;) {
    const ready = await fetch(`${server.url}/readyz`);
    if (ready.status === 503) {
      readyAt = Date.now() - signalledAt;
      expect((await ready.json()).error.code).toBe('NOT_LEADER');
      break;
    }
  }
  // While draining, the holder can still release, and /metrics still answers.
  const released = await api.release('drain/held', { sessionId: holder, fencingToken: held.fencingToken });
  while (drainAnswers.length < 4) await new Promise((r) => setTimeout(r, 20));
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  const drainingCount = counterOf(metrics, 'draining');
  const notLeaderCount = counterOf(metrics, 'not_leader');

  const exitCode = await server.exited;
  const exitedAfter = Date.now() - signalledAt;
  stop = true;
  await Promise.all(loops);

  console.log(
    `drain: /readyz 503 after ${readyAt} ms, exit ${exitCode} after ${exitedAfter} ms (delay ${DRAIN_MILLIS} ms); ` +
      `requests ${JSON.stringify(Object.fromEntries(statuses))}; grants ${recorder.accepted}; ` +
      `metrics draining=${drainingCount} not_leader=${notLeaderCount}`,
  );
  expect(readyAt).toBeLessThan(1000);
  expect(released.status).toBe(200);
  expect(unexpected).toEqual([]);
  for (const answer of drainAnswers) expect(answer).toEqual({ status: 503, code: 'NOT_LEADER', retryAfter: '1' });
  expect(drainingCount).toBeGreaterThanOrEqual(4);
  expect(notLeaderCount).toBe(0);
  expect(recorder.rejected).toEqual([]);
  expect(exitCode).toBe(0);
  expect(exitedAfter).toBeGreaterThanOrEqual(DRAIN_MILLIS);
}, 90_000);
