/**
 * Issue 22: on etcd a heartbeat only keeps the session's lease alive. It writes nothing
 * (etcd's revision does not move), heartbeats of one turn share one read, a session
 * ended elsewhere is not reported alive, and the session's reported expiry follows its lease.
 */
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { etcdKvRequests, etcdStores, namespaceOf, openSession, until } from './helpers.js';

const fixture = etcdStores();

async function revisionOf(endpoint: string): Promise<string> {
  const client = new Etcd3({ hosts: endpoint });
  try {
    const response = await client.kv.range({ key: Buffer.from('holdfast-test-revision-probe') });
    return String(response.header.revision);
  } finally {
    client.close();
  }
}

describe('etcd heartbeats: the lease, nothing else', () => {
  it('32 heartbeats write nothing: no revision, and at most one read each (reads of one turn share a txn)', async () => {
    const s = await fixture.store();
    const sessions = await Promise.all(Array.from({ length: 32 }, () => openSession(s, 10_000)));
    const endpoint = fixture.etcd.endpoints[0]!;
    const revision = await revisionOf(endpoint);
    const requestsBefore = await etcdKvRequests(endpoint);

    const beats = await Promise.all(sessions.map((session) => s.heartbeat(session.credential)));

    // Keep-alive answers arrive over several event-loop turns; each turn's reads share one txn
    // (how many turns depends on the machine). The probe's own Range is the +1.
    expect((await etcdKvRequests(endpoint)) - requestsBefore).toBeLessThanOrEqual(32 + 1);
    expect(await revisionOf(endpoint)).toBe(revision);
    beats.forEach((beat, index) => {
      expect(beat.kind).toBe('alive');
      if (beat.kind === 'alive') {
        expect(beat.session.sessionId).toBe(sessions[index]!.sessionId);
        expect(beat.session.expiresAt - beat.session.lastHeartbeatAt).toBe(10_000);
      }
    });
  });

  it('a session closed through another instance is not reported alive, though its lease may outlive the close', async () => {
    const here = await fixture.store();
    const elsewhere = await fixture.store('shared', namespaceOf(here));
    const session = await openSession(here, 10_000);
    expect((await here.heartbeat(session.credential)).kind).toBe('alive'); // caches the session here

    expect((await elsewhere.closeSession(session.credential)).kind).toBe('closed');

    expect(await here.heartbeat(session.credential)).toEqual({ kind: 'session_not_found' });
  });

  it('heartbeats with a wrong token keep no lease alive: the session lapses on its TTL while they go on', async () => {
    const s = await fixture.store();
    const session = await openSession(s, 2_000); // etcd's shortest lease
    const impostor = { sessionId: session.sessionId, tokenHash: 'f'.repeat(64) };
    await until(async () => {
      const beat = await s.heartbeat(impostor);
      if (beat.kind === 'alive') throw new Error('a wrong token was answered alive');
      return (await s.getSession(session.sessionId)) === null;
    }, 30_000, 'the session lapsing under forged heartbeats');
    expect(await s.heartbeat(session.credential)).toEqual({ kind: 'session_not_found' });
  });

  it("reads report the lease's expiry: a heartbeat moves the session's expiry forward", async () => {
    const s = await fixture.store();
    const beforeOpen = Date.now();
    const session = await openSession(s, 10_000);
    const opened = (await s.getSession(session.sessionId))!;
    // The lease's life is in whole seconds: the expiry is its end, about the TTL after the open.
    expect(opened.expiresAt).toBeGreaterThanOrEqual(beforeOpen + 8_000);
    expect(opened.expiresAt).toBeLessThanOrEqual(Date.now() + 10_000);
    expect(opened.expiresAt - opened.lastHeartbeatAt).toBe(10_000);

    // Let a whole second of the lease run out, then heartbeat: the expiry a read reports moves forward.
    let aged = opened;
    await until(async () => {
      aged = (await s.getSession(session.sessionId))!;
      return aged.expiresAt < Date.now() + 9_000;
    });
    expect((await s.heartbeat(session.credential)).kind).toBe('alive');
    const renewed = (await s.getSession(session.sessionId))!;
    expect(renewed.expiresAt).toBeGreaterThan(aged.expiresAt);
    const listed = await s.listSessions({ limit: 10 });
    expect(listed.items.find((item) => item.sessionId === session.sessionId)!.expiresAt).toBeGreaterThan(aged.expiresAt);
  });
});
