/**
 * Lock values and L8 watches over HTTP (issue 23), on every store; across two instances where the
 * store serves a fleet. A value goes with its grant (L4) and is replaced by a proclaim (L5); L7
 * lists the holders; L8 answers at once when the holder set already differs from `after`, parks
 * otherwise until a change made through either instance, and answers the unchanged state at its
 * `waitMillis`. Bad input is a 400 with the pinned body, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient } from '../support/http.js';
import { FLEET_STORES, startPair } from '../support/fleet-pair.js';
import { startServer, type TestServer } from '../support/server.js';

const STORES = ['embedded', ...FLEET_STORES] as const;

describe.each(STORES)('lock values and watches on %s', (store) => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    if (store === 'embedded') a = b = await startServer({ store });
    else [a, b] = await startPair(store);
  });
  afterAll(async () => {
    if (b !== a) await b?.stop();
    await a?.stop();
  });

  async function session(server: TestServer) {
    const client = httpClient(server.url);
    const opened = await client.openSession({ ttlMillis: 30_000, owner: `owner-on-${server === a ? 'a' : 'b'}` });
    expect(opened.status).toBe(201);
    return { client, sessionId: opened.body.sessionId as string };
  }

  it('a value goes with its grant, L7 lists the holder with it, and a proclaim replaces it under the same token', async () => {
    const leader = await session(a);
    const granted = await leader.client.acquire('values/leader', { sessionId: leader.sessionId, value: 'http://10.0.0.7:8080' });
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ mode: 'exclusive', limit: 1, value: 'http://10.0.0.7:8080' });
    const read = await httpClient(b.url).read('values/leader');
    expect(read.body).toMatchObject({
      held: true,
      mode: 'exclusive',
      limit: 1,
      fencingToken: granted.body.fencingToken,
      holders: [{ sessionId: leader.sessionId, owner: 'owner-on-a', fencingToken: granted.body.fencingToken, value: 'http://10.0.0.7:8080' }],
    });
    const proclaimed = await leader.client.renew('values/leader', { sessionId: leader.sessionId, fencingToken: granted.body.fencingToken, value: 'http://10.0.0.8:8080' });
    expect(proclaimed.status).toBe(200);
    expect(proclaimed.body).toMatchObject({ fencingToken: granted.body.fencingToken, value: 'http://10.0.0.8:8080' });
    expect((await httpClient(b.url).read('values/leader')).body.holders[0].value).toBe('http://10.0.0.8:8080');
    expect((await httpClient(a.url).read('values/free')).body).toMatchObject({ held: false, holders: [] });
  });

  it('L8 answers at once when the holder set already differs, and parks until a change through the other instance', async () => {
    const first = await session(a);
    const second = await session(b);
    const watcher = httpClient(b.url);
    const key = 'values/watched';
    // `after` absent: the state now.
    expect((await watcher.watch(key)).body).toMatchObject({ held: false, holders: [] });
    // Free, and `after` names a holder set that was: answered at once.
    expect((await watcher.watch(key, '?after=5&waitMillis=20000')).body).toMatchObject({ held: false });

    const held = await first.client.acquire(key, { sessionId: first.sessionId, value: 'one' });
    // Parked on B at the current token; a release through A and a grant through B (its waiter) end it.
    const parked = watcher.watch(key, `?after=${held.body.fencingToken}&waitMillis=30000`);
    const waiting = second.client.acquire(key, { sessionId: second.sessionId, waitMillis: 20_000, value: 'two' });
    expect((await first.client.release(key, { sessionId: first.sessionId, fencingToken: held.body.fencingToken })).status).toBe(200);
    const changed = await parked;
    expect(changed.status).toBe(200);
    expect(changed.body.holders.map((h: { fencingToken: string }) => h.fencingToken)).not.toContain(held.body.fencingToken);
    const next = await waiting;
    expect(next.status).toBe(200);
    expect(next.body.value).toBe('two');
    expect(BigInt(next.body.fencingToken)).toBeGreaterThan(BigInt(held.body.fencingToken));
    // Watching the new holder through A: a revoke through B ends it.
    const parkedOnA = httpClient(a.url).watch(key, `?after=${next.body.fencingToken}&waitMillis=30000`);
    const revoked = await httpClient(b.url).admin(b.operatorToken).revoke(key, { reason: 'watch test' });
    expect(revoked.body.outcome).toBe('REVOKED');
    expect((await parkedOnA).body).toMatchObject({ held: false, holders: [] });
  });

  it('untilHeld (an extension): a watch of a free key parks until a grant through the other instance', async () => {
    const key = 'values/until-held';
    const parked = httpClient(b.url).watch(key, '?after=0&untilHeld=true&waitMillis=30000');
    const holder = await session(a);
    // The parked watch's row is registered before it reads: a grant made any time after the request was sent wakes it.
    const granted = await holder.client.acquire(key, { sessionId: holder.sessionId, value: 'first leader' });
    const answer = await parked;
    expect(answer.body).toMatchObject({ held: true, fencingToken: granted.body.fencingToken, holders: [{ value: 'first leader' }] });
    // Without it, `after=0` answers at once, as pinned.
    const free = await httpClient(b.url).watch('values/until-held-free', '?after=0&waitMillis=30000');
    expect(free.body).toMatchObject({ held: false });
  });

  it('L8 answers the unchanged state at its waitMillis', async () => {
    const holder = await session(a);
    const held = await holder.client.acquire('values/quiet', { sessionId: holder.sessionId });
    const answer = await httpClient(b.url).watch('values/quiet', `?after=${held.body.fencingToken}&waitMillis=300`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ held: true, fencingToken: held.body.fencingToken });
  });

  it('bad input is a 400 with the pinned body: a value over 4096 bytes or not kept as sent, a bad `after` or `waitMillis`, an unknown parameter', async () => {
    const holder = await session(a);
    // 1366 × "€" is 4098 bytes of UTF-8 in 1366 characters: the byte limit, not the character count, refuses it.
    const tooLong = '€'.repeat(1366);
    const refused = await holder.client.acquire('values/long', { sessionId: holder.sessionId, value: tooLong });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
    expect((await holder.client.read('values/long')).body.held).toBe(false);
    const fits = await holder.client.acquire('values/long', { sessionId: holder.sessionId, value: '€'.repeat(1365) });
    expect(fits.status).toBe(200);
    const proclaimTooLong = await holder.client.renew('values/long', { sessionId: holder.sessionId, fencingToken: fits.body.fencingToken, value: tooLong });
    expect(proclaimTooLong.status).toBe(400);
    expect((await holder.client.read('values/long')).body.holders[0].value).toBe('€'.repeat(1365));
    // Text no store keeps as sent is refused on every store alike: a lone surrogate (no UTF-8 form) and a NUL.
    for (const [name, value] of [['lone surrogate', 'a\ud800b'], ['NUL', 'a\u0000b']] as const) {
      const odd = await holder.client.acquire('values/odd', { sessionId: holder.sessionId, value });
      expect(odd.status, name).toBe(400);
      expect(odd.body.error, name).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
      const proclaimed = await holder.client.renew('values/long', { sessionId: holder.sessionId, fencingToken: fits.body.fencingToken, value });
      expect(proclaimed.status, name).toBe(400);
    }
    expect((await holder.client.read('values/odd')).body.held).toBe(false);
    expect((await holder.client.read('values/long')).body.holders[0].value).toBe('€'.repeat(1365));
    const watcher = httpClient(a.url);
    for (const query of ['?after=abc', '?after=-1', '?waitMillis=60001', '?waitMillis=1.5', '?after=1&since=2']) {
      const answer = await watcher.watch('values/long', query);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.code, query).toBe('VALIDATION_FAILED');
    }
  });
});
