/**
 * server/credential-reload.ts on its own: with the watch off (a filesystem that reports nothing) the
 * poll alone puts a changed file in force; unchanged bytes are not re-applied after the start; a refused file is
 * reported once per content and changes nothing; reloadAll (SIGHUP) re-applies unchanged files; the
 * loader is handed the bytes that held still and never reads the file itself, unless it was unreadable.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { watchCredentialFiles, type CredentialReloader } from '../../server/credential-reload.js';
import { eventually } from '../support/http.js';

let reloader: CredentialReloader | undefined;
let dir: string | undefined;
afterEach(() => {
  reloader?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the poll alone notices changes; a refused file keeps the last good one and is reported once', async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'holdfast-reload-unit-'));
  const file = path.join(dir, 'secret');
  writeFileSync(file, 'one');
  let inForce = 'one';
  let loads = 0;
  const reloaded: string[] = [];
  const refused: string[] = [];
  reloader = watchCredentialFiles(
    [
      {
        credential: 'tokens',
        file,
        reload: async (bytes) => {
          loads += 1;
          if (!bytes) throw new Error('no bytes handed over');
          const text = bytes.toString('utf8');
          if (text.startsWith('bad')) throw new Error(`refusing ${text}`);
          inForce = text;
          return 1;
        },
      },
    ],
    { reloaded: (f) => reloaded.push(`${f.cause}:${inForce}`), refused: (f) => refused.push(f.message) },
    { watch: false, sighup: false, pollMillis: 20 },
  );
  // The reloader puts the file in force once at start (silently), then applies changes only.
  await eventually(async () => loads === 1);
  writeFileSync(file, 'two');
  await eventually(async () => inForce === 'two');
  writeFileSync(file, 'bad-1');
  await eventually(async () => refused.length > 0);
  expect(refused[0]).toBe('refusing bad-1; keeping the last good tokens');
  expect(inForce).toBe('two');
  writeFileSync(file, 'three');
  await eventually(async () => inForce === 'three');
  // Several polls passed over the bad content: it was reported once.
  expect(refused).toHaveLength(1);
  await reloader.reloadAll('sighup');
  expect(reloaded).toEqual(['change:two', 'change:three', 'sighup:three']);
});

test('an unreadable file hands the loader no bytes, so its own read says why; the same content is not refused twice', async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'holdfast-reload-unit-'));
  const file = path.join(dir, 'secret');
  writeFileSync(file, 'one');
  const handed: (string | undefined)[] = [];
  const refused: string[] = [];
  reloader = watchCredentialFiles(
    [
      {
        credential: 'audit_key',
        file,
        reload: async (bytes) => {
          handed.push(bytes?.toString('utf8'));
          if (!bytes) throw new Error('cannot read it');
          return 1;
        },
      },
    ],
    { reloaded: () => undefined, refused: (f) => refused.push(f.message) },
    { watch: false, sighup: false, pollMillis: 20 },
  );
  await eventually(async () => handed.length === 1);
  rmSync(file);
  await eventually(async () => refused.length > 0);
  writeFileSync(file, 'two');
  await eventually(async () => handed.at(-1) === 'two');
  expect(handed).toEqual(['one', undefined, 'two']);
  expect(refused).toEqual(['cannot read it; keeping the last good audit key']);
});
