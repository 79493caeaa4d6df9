import { expect, test } from 'vitest';
import { loadConfig } from '../../lock/config.js';

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
