/**
 * The embedded store's identity (lock/store/sql/embedded-identity.ts, issue 25): a `pgdata` copied into
 * another data directory is found restored (its recorded identity names the directory it came from),
 * `tokens advance` makes it current, and the original directory stays current throughout.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadConfig } from '../../lock/config.js';
import { advanceTokens } from '../../lock/store/advance-tokens.js';
import { openStore } from '../../lock/store/open-store.js';

const work = mkdtempSync(path.join(tmpdir(), 'holdfast-identity-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const configFor = (dataDir: string) => loadConfig({ HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dataDir });
const stateOf = async (dataDir: string) => {
  const store = await openStore(configFor(dataDir));
  try {
    return await store.tokenFloor!.check();
  } finally {
    await store.close();
  }
};

test('a copied pgdata is restored until tokens advance; the original stays current', async () => {
  const original = path.join(work, 'original');
  const first = await stateOf(original);
  expect(first).toMatchObject({ state: 'current' });
  expect(first.live).toMatch(/^embedded:[0-9a-f]{32}$/);

  const copy = path.join(work, 'copy');
  cpSync(path.join(original, 'pgdata'), path.join(copy, 'pgdata'), { recursive: true });
  const copied = await stateOf(copy);
  expect(copied).toMatchObject({ state: 'restored', recorded: first.live });
  expect(copied.live).not.toBe(first.live);

  const advanced = await advanceTokens(configFor(copy), { actor: 'cli:test', requestId: 'identity-test', reason: 'copied' });
  expect(advanced).toMatchObject({ backend: 'embedded', identity: copied.live, audit: { action: 'tokens.advance', actor: 'cli:test' } });
  expect(await stateOf(copy)).toMatchObject({ state: 'current', recorded: copied.live });
  expect(await stateOf(original)).toMatchObject({ state: 'current', recorded: first.live });
}, 600_000);
