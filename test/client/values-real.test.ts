/**
 * Lock values, proclaim and campaign through the SDK against a real server on every store
 * (issue 23 slice 1): the value travels with L4 and shows in L7's holders and `handle.value`;
 * a proclaim replaces it with the same token and moves the handle's deadline; a proclaim after
 * a revoke marks the handle lost and throws LockLostError; a value over the server's limit is
 * a ValidationError; a campaign waits for the leader to resign, and a lost leadership gives
 * its key back so the session can campaign again; an aborted campaign leaves nothing held.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LockClient } from '../../client/client.js';
import { LockLostError, ValidationError } from '../../client/errors.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';

/** The TTL of the leaderships the campaign test keeps until it ends them itself (see there). */
const LEADER_TTL_MILLIS = 15_000;

describe.each(STORES)('values, proclaim and campaign on %s', (store) => {
  let server: TestServer;
  let client: LockClient;

  beforeAll(async () => {
    server = await startServer({ store });
    client = new LockClient({ baseUrl: server.url });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('acquire with a value; proclaim replaces it (same token, later deadline); L7 shows it in holders', async () => {
    const session = await client.openSession({ owner: 'values' });
    try {
      const handle = (await session.acquire('values/a', { value: '10.0.0.1:80', ttlMillis: 10_000 }))!;
      expect(handle.value).toBe('10.0.0.1:80');
      let info = await client.readLock('values/a');
      expect(info.holders).toEqual([expect.objectContaining({ sessionId: session.sessionId, fencingToken: handle.fencingToken, value: '10.0.0.1:80' })]);
      const before = handle.expiresAt;
      await handle.proclaim('10.0.0.2:80');
      expect(handle.value).toBe('10.0.0.2:80');
      expect(handle.expiresAt).toBeGreaterThan(before);
      info = await client.readLock('values/a');
      expect(info.fencingToken).toBe(handle.fencingToken);
      expect(info.holders[0]!.value).toBe('10.0.0.2:80');
      // A nested acquire keeps the held value (the server answers the existing grant).
      expect(await session.acquire('values/a', { value: 'ignored' })).toBe(handle);
      await session.release(handle);
      await session.release(handle);
      await expect(handle.proclaim('x')).rejects.toBeInstanceOf(ValidationError);
      // Over the limit (4096 bytes of UTF-8): refused before it is sent, as a ValidationError.
      await expect(session.acquire('values/b', { value: 'é'.repeat(2_049) })).rejects.toBeInstanceOf(ValidationError);
      await expect(session.acquire('values/b', { value: 42 as unknown as string })).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await session.close();
    }
  });

  test('a proclaim after a revoke marks the handle lost and throws LockLostError', async () => {
    const session = await client.openSession({ owner: 'values-revoke' });
    try {
      const handle = (await session.acquire('values/revoked', { value: 'v' }))!;
      const revoked = await httpClient(server.url).admin(server.operatorToken).revoke('values/revoked', { reason: 'test', expectedFencingToken: handle.fencingToken });
      expect(revoked.status).toBe(200);
      await expect(handle.proclaim('w')).rejects.toBeInstanceOf(LockLostError);
      expect(handle.lost).toBe(true);
      expect(handle.signal.reason).toBeInstanceOf(LockLostError);
      expect(handle.value).toBe('v');
      await session.release(handle);
    } finally {
      await session.close();
    }
  });

  test('campaign waits for the leader to resign; the term rises; a lost leadership frees the session to campaign again', async () => {
    const [a, b] = await Promise.all([client.openSession({ owner: 'leader-a' }), client.openSession({ owner: 'leader-b' })]);
    try {
      // `first` must lead, and `second` once elected must hold, until the test ends them (resign,
      // revoke): `first.lost` stays false, L7 shows `second`'s holder, the revoke names its term. The
      // SDK renews every TTL/3 and vouches until send time + TTL − min(1 s, TTL/4): at 15 s a renewal
      // has 14 − 5 = 9 s (abandoned after 3.75 s, sent again at once); at 3 s it had 2.25 − 1 = 1.25 s,
      // and on a loaded 2-core CI machine `first` was lost before its resign. (`second`'s grant is
      // vouched from its waiting L4's send, up to a wait round before the grant: 7 s of its 14 at
      // 15 s, 1.1 s of its 2.25 at 3 s.)
      const first = await a.campaign('values/election', 'a:1', { ttlMillis: LEADER_TTL_MILLIS });
      expect(first.value).toBe('a:1');
      const second = b.campaign('values/election', 'b:1', { ttlMillis: LEADER_TTL_MILLIS });
      await expect(a.campaign('values/election', 'again')).rejects.toBeInstanceOf(ValidationError);
      await first.proclaim('a:2');
      expect((await client.readLock('values/election')).holders[0]).toMatchObject({ owner: 'leader-a', value: 'a:2', fencingToken: first.term });
      await first.resign();
      expect(first.signal.aborted).toBe(true);
      expect(first.lost).toBe(false);
      const next = await second;
      expect(BigInt(next.term)).toBeGreaterThan(BigInt(first.term));
      expect((await client.readLock('values/election')).holders[0]).toMatchObject({ owner: 'leader-b', value: 'b:1' });

      // Revoked: the renewer finds out within a third of the TTL, the signal aborts, the key is given back.
      const revoked = await httpClient(server.url).admin(server.operatorToken).revoke('values/election', { reason: 'test', expectedFencingToken: next.term });
      expect(revoked.status).toBe(200);
      await new Promise((resolve) => next.signal.addEventListener('abort', resolve, { once: true }));
      expect(next.lost).toBe(true);
      expect(next.signal.reason).toBeInstanceOf(LockLostError);
      const again = await b.campaign('values/election', 'b:2', { ttlMillis: 3_000 });
      expect(BigInt(again.term)).toBeGreaterThan(BigInt(next.term));
      await again.resign();
      // An aborted campaign rejects with the signal's reason and leaves nothing held.
      const holder = await a.campaign('values/election', 'a:3');
      const controller = new AbortController();
      const waiting = b.campaign('values/election', 'b:3', { signal: controller.signal });
      controller.abort(new Error('stop campaigning'));
      await expect(waiting).rejects.toThrow('stop campaigning');
      await holder.resign();
      // Its L4 in flight was left to finish (C2 acquire, Abort): a grant it got is given back, not kept.
      await eventually(async () => !(await client.readLock('values/election')).held, 10_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);
});
