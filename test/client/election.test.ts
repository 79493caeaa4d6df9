/**
 * Issue 23 acceptance, election: three campaigners in three processes (test/support/campaigner.ts,
 * through the SDK's `session.campaign`), spread over two instances where the store has a fleet
 * (postgres, etcd; embedded has one). Each round the leader's process is SIGKILLed:
 * - a new leader is elected within one session TTL + 1 s of the kill, its term above the old one;
 * - the old leader's late write, replayed with its old term, is refused by the fenced resource
 *   (FencedResourceRecorder, test/support/fenced-resource.ts) once the new leader has written;
 * - `client.observe`, running throughout on another instance, yields each leader exactly once,
 *   in term order (the terms the campaigners reported), and `null` once the last one resigns.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LockClient, type Leader } from '../../client/index.js';
import { FencedResourceRecorder } from '../support/fenced-resource.js';
import { startPair } from '../support/fleet-pair.js';
import { eventually } from '../support/http.js';
import { startServer, type StoreName, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';
import { EventLog, type Stamped } from './support/event-log.js';

const root = path.resolve(import.meta.dirname, '../..');
const CAMPAIGNER = path.join(root, 'test/support/campaigner.ts');
/**
 * The campaigners' session TTL, and their leadership grants' TTL. 10 s, not less: every campaigner
 * must keep its session through the whole test (the waiting ones through two elections), and the
 * SDK vouches for it only until send time + TTL − min(1 s, TTL/4), heartbeating every TTL/3. At
 * 10 s that leaves 9 − 3.33 = 5.67 s for a heartbeat's round trip (abandoned after 2.5 s and sent
 * again at once); at 3 s it was 2.25 − 1 = 1.25 s, and waiting campaigners on a loaded 2-core CI
 * machine lost their sessions ("passed its conservative deadline").
 */
const SESSION_TTL_MILLIS = 10_000;
/**
 * How long after the kill a new leader may come, beyond one TTL: issue 23's bound, kept. The killed
 * leader's last heartbeat and renewal were sent before the kill (up to TTL/3 before it), so its
 * session and grant lapse at most one TTL after it; then the sweep (every 100 ms) ends them, a waiter
 * is granted, and its "elected" line crosses a pipe. Measured at TTL 10 s: 6.9–9.97 s after the kill,
 * quiet and at load average ~22. A longer wait (a server ignoring the requested TTL for its 15 s
 * default, or a grant outliving its session until C3's 30 s default) fails.
 */
const ELECTION_SLACK_MILLIS = 1_000;

interface CampaignEvent {
  event: 'ready' | 'elected' | 'write' | 'lost';
  id: string;
  term?: string;
  value?: string;
  reason?: string;
}

async function startServers(store: StoreName): Promise<TestServer[]> {
  return store === 'embedded' ? [await startServer({ store })] : startPair(store);
}

describe.each(STORES)('election on %s', (store) => {
  let servers: TestServer[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    servers = await startServers(store);
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const server of servers) await server.stop();
  });

  test('SIGKILL of the leader: a new leader within one session TTL + 1 s, a higher term, the old term fenced out; observe sees each leader once, in order', async () => {
    const urls = servers.map((s) => s.url);
    const name = `election/${store}`;
    const recorder = new FencedResourceRecorder();
    const log = new EventLog<CampaignEvent>();
    /** Writes the campaigners made, with what the fenced resource answered. */
    const writes: { id: string; term: string; accepted: boolean }[] = [];

    // The observer watches through the last instance; campaigners 0 and 2 campaign through the first.
    const observerClient = new LockClient({ baseUrl: urls[urls.length - 1]! });
    const stopObserving = new AbortController();
    const observed: Stamped<{ leader: Leader | null }>[] = [];
    const observing = (async () => {
      for await (const leader of observerClient.observe(name, { signal: stopObserving.signal, waitMillis: 10_000 })) {
        observed.push({ leader, at: performance.now() });
      }
    })();

    const campaigners = [0, 1, 2].map((i) => {
      const child = spawn(process.execPath, ['--import', 'tsx', CAMPAIGNER, urls[i % urls.length]!, name, String(i), String(SESSION_TTL_MILLIS)], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      log.attach(child, (event) => {
        if (event.event === 'write') writes.push({ id: event.id, term: event.term!, accepted: recorder.write(name, event.term!) });
      });
      return child;
    });
    for (const id of ['0', '1', '2']) await log.waitFor((e) => e.event === 'ready' && e.id === id, 90_000, `campaigner ${id} ready`);

    const elected = [await log.waitFor((e) => e.event === 'elected', 30_000, 'a first leader')];
    const killedAt: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      const leader = elected[round]!;
      await log.waitFor((e) => e.event === 'write' && e.term === leader.term, 10_000, `a write of term ${leader.term}`);
      killedAt.push(performance.now());
      campaigners[Number(leader.id)]!.kill('SIGKILL');
      const next = await log.waitFor(
        (e) => e.event === 'elected' && e.id !== leader.id && !elected.includes(e),
        SESSION_TTL_MILLIS + 30_000,
        `a leader after term ${leader.term}`,
      );
      elected.push(next);
      const electionMillis = next.at - killedAt[round]!;
      console.log(`[election ${store}] round ${round + 1}: term ${leader.term} killed, term ${next.term} elected after ${electionMillis.toFixed(0)} ms`);
      expect(electionMillis).toBeLessThanOrEqual(SESSION_TTL_MILLIS + ELECTION_SLACK_MILLIS);
      expect(BigInt(next.term!)).toBeGreaterThan(BigInt(leader.term!));
      // The new leader writes; then the deposed one's late write, with its old term, is refused.
      await log.waitFor((e) => e.event === 'write' && e.term === next.term, 10_000, `a write of term ${next.term}`);
      expect(recorder.write(name, leader.term!)).toBe(false);
    }

    // The last leader resigns once observed (C3 L8 cannot park on a free key, so a leader elected
    // out of a free key and gone within observe's free-key poll pause could pass unseen: C2 observe);
    // then the observer sees the key free.
    const last = elected[2]!;
    const seen = () => JSON.stringify({ observed, elected: elected.map((e) => e.term) });
    const observedWithin = (condition: () => boolean) =>
      eventually(async () => condition(), 30_000).catch((error: Error) => {
        throw new Error(`${error.message}: ${seen()}`);
      });
    await observedWithin(() => observed.some((o) => o.leader?.term === last.term));
    campaigners[Number(last.id)]!.kill('SIGTERM');
    await observedWithin(() => observed.at(-1)?.leader === null);
    stopObserving.abort();
    await observing;

    const terms = elected.map((e) => e.term!);
    expect(new Set(terms).size).toBe(3);
    // Each leader exactly once, in term order; nulls only where the key was free.
    const observedTerms = observed.flatMap((o) => (o.leader === null ? [] : [o.leader.term]));
    expect(observedTerms, seen()).toEqual(terms);
    expect(observed.at(-1)!.leader).toBeNull();
    for (const o of observed) {
      if (o.leader === null) continue;
      const who = elected.find((e) => e.term === o.leader!.term)!;
      expect(o.leader).toEqual({ term: who.term, owner: `campaigner-${who.id}`, value: `value-of-${who.id}` });
    }
    // Every write a campaigner made while it led was accepted: only the replayed late writes were refused.
    expect(writes.filter((w) => !w.accepted)).toEqual([]);
    expect(recorder.rejected.map((r) => r.token)).toEqual(terms.slice(0, 2));
  }, 240_000);
});
