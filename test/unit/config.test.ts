import { expect, test } from 'vitest';
import { httpTimeoutsOf, loadConfig } from '../../lock/config.js';

test('with nothing set, the server runs on port 7070 with the embedded store in ./.holdfast', () => {
  const config = loadConfig({});
  expect(config.HOLDFAST_STORE).toBe('embedded');
  expect(config.HOLDFAST_PORT).toBe(7070);
  expect(config.HOLDFAST_HOST).toBe('127.0.0.1');
  expect(config.HOLDFAST_DATA_DIR).toBe('./.holdfast');
  expect(config.LOCK_DEFAULT_TTL_MS).toBe(30000);
});

test('invalid values stop the server with a message naming the variable', () => {
  expect(() => loadConfig({ HOLDFAST_STORE: 'redis' })).toThrow(/HOLDFAST_STORE/);
  expect(() => loadConfig({ HOLDFAST_PORT: 'seventy' })).toThrow(/HOLDFAST_PORT: must be a whole number/);
  expect(() => loadConfig({ HOLDFAST_PORT: '70000' })).toThrow(/HOLDFAST_PORT/);
  expect(() => loadConfig({ LOCK_DEFAULT_TTL_MS: '10' })).toThrow(/LOCK_DEFAULT_TTL_MS/);
  expect(() => loadConfig({ HOLDFAST_STORE: 'postgres' })).toThrow(/needs DATABASE_URL/);
  expect(() => loadConfig({ HOLDFAST_STORE: 'etcd' })).toThrow(/needs ETCD_ENDPOINTS/);
});

test('empty variables count as unset', () => {
  expect(loadConfig({ HOLDFAST_PORT: '', HOLDFAST_STORE: '' }).HOLDFAST_PORT).toBe(7070);
});

test('HTTP timeouts (issue 24): defaults, and headers may not outlast the whole request', () => {
  expect(httpTimeoutsOf(loadConfig({}))).toEqual({ requestMillis: 10_000, headersMillis: 5_000, idleMillis: 72_000 });
  expect(
    httpTimeoutsOf(loadConfig({ HOLDFAST_HTTP_REQUEST_TIMEOUT_MS: '2000', HOLDFAST_HTTP_HEADERS_TIMEOUT_MS: '1000', HOLDFAST_HTTP_IDLE_TIMEOUT_MS: '3000' })),
  ).toEqual({ requestMillis: 2000, headersMillis: 1000, idleMillis: 3000 });
  expect(() => loadConfig({ HOLDFAST_HTTP_REQUEST_TIMEOUT_MS: '2000', HOLDFAST_HTTP_HEADERS_TIMEOUT_MS: '3000' })).toThrow(
    /HOLDFAST_HTTP_HEADERS_TIMEOUT_MS must not exceed HOLDFAST_HTTP_REQUEST_TIMEOUT_MS/,
  );
  // Node closes an idle connection 1 s after its keep-alive setting: below 2 s there is nothing left to set.
  expect(() => loadConfig({ HOLDFAST_HTTP_IDLE_TIMEOUT_MS: '1000' })).toThrow(/HOLDFAST_HTTP_IDLE_TIMEOUT_MS/);
  expect(() => loadConfig({ HOLDFAST_HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(/HOLDFAST_HTTP_REQUEST_TIMEOUT_MS/);
});
