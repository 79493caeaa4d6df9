/**
 * Issue 24 item 9, look-alike keys, against a real server (embedded store): a key
 * is normalised to Unicode NFC on the way in, so "é" precomposed (U+00E9) and
 * decomposed (e + U+0301) are one lock; a key holding an invisible or
 * bidirectional-control character (zero-width space, right-to-left override, …)
 * is refused 400 with the pinned error body; and a key with an unencoded `/`,
 * which no route matches, is answered 404 NOT_FOUND with a message naming
 * percent-encoding. Every answer is also checked against docs/openapi.json.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { noRouteMessage } from '../../lock/http/validation.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const NFC = 'caf\u00e9';
const NFD = 'cafe\u0301';

const expectPinnedError = (answer: { status: number; body: any }, status: number, code: string) => {
  expect(answer.status).toBe(status);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'retryable']);
  expect(answer.body.error.code).toBe(code);
  expect(answer.body.error.retryable).toBe(false);
  expect(typeof answer.body.error.message).toBe('string');
};

let server: TestServer;
let api: ReturnType<typeof httpClient>;

beforeAll(async () => {
  server = await startServer({ store: 'embedded' });
  api = httpClient(server.url);
});
afterAll(async () => {
  await server?.stop();
});

const open = async () => {
  const answer = await api.openSession({ ttlMillis: 60_000 });
  expect(answer.status).toBe(201);
  return answer.body.sessionId as string;
};

describe('NFC: one key however "é" is typed', () => {
  test('the two spellings differ as strings and bytes (the premise)', () => {
    expect(NFC).not.toBe(NFD);
    expect(NFD.normalize('NFC')).toBe(NFC);
  });

  test('a grant taken with the decomposed key is held under the NFC key: another session is refused, L7 and A1 see one lock', async () => {
    const key = `orders/${NFD}/${Date.now()}`;
    const nfcKey = key.normalize('NFC');
    const holder = await open();
    const other = await open();

    const grant = await api.acquire(key, { sessionId: holder });
    expect(grant.status).toBe(200);
    expect(grant.body.key).toBe(nfcKey);

    // The precomposed spelling names the same lock: contended, not a second grant.
    const contended = await api.acquire(nfcKey, { sessionId: other });
    expect(contended.status).toBe(409);
    expect(contended.body.error.code).toBe('LOCK_CONTENDED');

    for (const spelling of [key, nfcKey]) {
      const info = await api.read(spelling);
      expect(info.status).toBe(200);
      expect(info.body).toMatchObject({ key: nfcKey, held: true, sessionId: holder, fencingToken: grant.body.fencingToken });
    }
    const listed = await api.admin(server.viewerToken).listLocks(`?prefix=${encodeURIComponent(nfcKey)}`);
    expect(listed.body.items.map((item: { key: string }) => item.key)).toEqual([nfcKey]);

    // The holder renews and releases with either spelling: it is one grant.
    const renewed = await api.renew(nfcKey, { sessionId: holder, fencingToken: grant.body.fencingToken });
    expect(renewed.status).toBe(200);
    expect(renewed.body.fencingToken).toBe(grant.body.fencingToken);
    const released = await api.release(key, { sessionId: holder, fencingToken: grant.body.fencingToken });
    expect(released.status).toBe(200);
    expect(released.body).toEqual({ key: nfcKey, released: true });
    expect((await api.read(nfcKey)).body.held).toBe(false);
  });

  test('the same session acquiring with the other spelling gets its existing grant back (same token)', async () => {
    const key = `${NFC}/${Date.now()}`;
    const session = await open();
    const first = await api.acquire(key, { sessionId: session });
    const again = await api.acquire(key.normalize('NFD'), { sessionId: session });
    expect(again.status).toBe(200);
    expect(again.body.fencingToken).toBe(first.body.fencingToken);
    expect(again.body.key).toBe(key);
  });
});

describe('invisible and bidirectional-control characters are refused, 400 with the pinned body', () => {
  const cases = [
    ['a zero-width space', 'pay\u200bouts', 'U+200B'],
    ['a right-to-left override', 'invoice-\u202eFDP.exe', 'U+202E'],
    ['a zero-width joiner', 'pay\u200douts', 'U+200D'],
    ['a left-to-right mark', '\u200epayouts', 'U+200E'],
    ['a right-to-left isolate', 'pay\u2067outs', 'U+2067'],
    ['a byte-order mark', '\ufeffpayouts', 'U+FEFF'],
  ] as const;

  test.each(cases)('%s: L4, L7 and A3 answer 400 VALIDATION_FAILED naming the character; nothing is granted', async (_name, key, codePoint) => {
    const session = await open();
    const acquire = await api.acquire(key, { sessionId: session });
    expectPinnedError(acquire, 400, 'VALIDATION_FAILED');
    expect(acquire.body.error.message).toContain('invisible or bidirectional-control');
    expect(acquire.body.error.message).toContain(codePoint);
    expectPinnedError(await api.read(key), 400, 'VALIDATION_FAILED');
    expectPinnedError(await api.admin(server.operatorToken).revoke(key, { reason: 'look-alike' }), 400, 'VALIDATION_FAILED');
    // The visible spelling is a different, free key: the refused request took nothing.
    const visible = key.replace(/[\u200b\u200d\u200e\u2067\ufeff\u202e]/g, '');
    expect((await api.read(visible)).body.held).toBe(false);
  });
});

describe('an unencoded "/" in a key: 404 naming percent-encoding', () => {
  test('POST /v1/locks/a/b/acquire and GET /v1/locks/a/b answer 404 NOT_FOUND whose message names %2F and the encoded path', async () => {
    const session = await open();
    const acquire = await api.call('POST', '/v1/locks/orders/42/acquire', { sessionId: session });
    expectPinnedError(acquire, 404, 'NOT_FOUND');
    expect(acquire.body.error.message).toContain('percent-encoded');
    expect(acquire.body.error.message).toContain('/v1/locks/orders%2F42/acquire');

    const read = await api.call('GET', '/v1/locks/orders/42');
    expectPinnedError(read, 404, 'NOT_FOUND');
    expect(read.body.error.message).toContain('/v1/locks/orders%2F42');

    // Encoded, the same key is one path segment and the route answers.
    expect((await api.acquire('orders/42', { sessionId: session })).status).toBe(200);
  });

  test('noRouteMessage: the hint only where a key route would match with the slash encoded', () => {
    expect(noRouteMessage('POST', '/v1/locks/a/b/release?x=1')).toBe(
      'no route POST /v1/locks/a/b/release: a lock key is one path segment, so a "/" inside it must be percent-encoded as %2F ' +
        '(encodeURIComponent(key)): /v1/locks/a%2Fb/release',
    );
    expect(noRouteMessage('GET', '/v1/admin/locks/x/y/z/history')).toContain('/v1/admin/locks/x%2Fy%2Fz/history');
    // L8 (watch) before L7: the suffix is the route's, not the key's.
    expect(noRouteMessage('GET', '/v1/locks/a/b/watch')).toContain('/v1/locks/a%2Fb/watch');
    expect(noRouteMessage('POST', '/v1/admin/locks/x/y/revoke')).toContain('/v1/admin/locks/x%2Fy/revoke');
    // No key route: the plain message.
    expect(noRouteMessage('GET', '/v1/nothing/here')).toBe('no route GET /v1/nothing/here');
    // A method no key route has, or an unknown action after a one-segment key, is not a slash problem.
    expect(noRouteMessage('DELETE', '/v1/locks/a/b')).toBe('no route DELETE /v1/locks/a/b');
    expect(noRouteMessage('POST', '/v1/locks/k/frobnicate')).toBe('no route POST /v1/locks/k/frobnicate');
  });
});
