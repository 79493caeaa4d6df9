/**
 * Live credentials (issue 25) on two real server processes sharing one PostgreSQL store, one tokens
 * file and one audit key file:
 * - a token removed from the file is refused by both within 5 s, and a token added works on both,
 *   with no restart;
 * - a broken tokens file keeps the last good one in force on both, and each logs why;
 * - SIGHUP re-reads both files (logged with cause `sighup`);
 * - the audit key rotated mid-run (new key first, old key kept on the next line) leaves a chain
 *   whose entries name both keys and that verifies end to end on both instances.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { AuditEntry } from '../../contract/records.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres } from '../support/server.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';

const secret = () => randomBytes(24).toString('base64url');
type Entry = { name: string; token: string; role: 'viewer' | 'operator' | 'client' };

describe('live reload of the tokens file and the audit key, two instances on one PostgreSQL', () => {
  let dir: string;
  let tokensFile: string;
  let keyFile: string;
  let servers: ServerProcess[] = [];
  const operator: Entry = { name: 'ops', token: secret(), role: 'operator' };
  const doomed: Entry = { name: 'doomed', token: secret(), role: 'viewer' };
  const fresh: Entry = { name: 'fresh', token: secret(), role: 'operator' };
  const oldKey = randomBytes(32).toString('hex');
  const newKey = randomBytes(32).toString('hex');

  /** As editors and secret volumes do: a new file renamed over the old one. */
  const replaceFile = (file: string, text: string) => {
    const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(temp, text, { mode: 0o600 });
    renameSync(temp, file);
  };
  const writeTokens = (entries: Entry[]) => replaceFile(tokensFile, JSON.stringify(entries));
  const logs = (server: ServerProcess) =>
    server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const whoami = (server: ServerProcess, token: string) =>
    fetch(`${server.url}/v1/admin/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-reload-'));
    tokensFile = path.join(dir, 'tokens.json');
    keyFile = path.join(dir, 'audit.key');
    writeTokens([operator, doomed]);
    writeFileSync(keyFile, `${oldKey}\n`, { mode: 0o600 });
    const env = {
      HOLDFAST_STORE: 'postgres',
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
      HOLDFAST_AUDIT_KEY_FILE: keyFile,
    };
    servers = await Promise.all([spawnServer(env), spawnServer(env)]);
  });
  afterAll(async () => {
    for (const server of servers) server.child.kill('SIGTERM');
    await Promise.all(servers.map((server) => server.exited));
    rmSync(dir, { recursive: true, force: true });
  });

  test('a removed token is refused within 5 s on both instances; a new one works without a restart; a broken file keeps the last good one', async () => {
    for (const server of servers) expect(await whoami(server, doomed.token)).toBe(200);
    for (const server of servers) expect(await whoami(server, fresh.token)).toBe(401);

    writeTokens([operator, fresh]);
    const changed = Date.now();
    // The acceptance bound itself: each instance refuses the removed token within 5 s of the change.
    const refusedAfter = await Promise.all(
      servers.map((server) => eventually(async () => (await whoami(server, doomed.token)) === 401 && Date.now() - changed, 5_000, 25)),
    );
    for (const millis of refusedAfter) expect(millis).toBeLessThan(5_000);
    for (const server of servers) expect(await whoami(server, fresh.token)).toBe(200);
    for (const server of servers) {
      expect(logs(server).find((l) => l.event === 'credentials_reloaded' && l.credential === 'tokens')).toMatchObject({
        level: 'info',
        file: tokensFile,
        cause: 'change',
        entries: 2,
      });
    }

    // A broken file: the last good tokens stay in force, and each instance says why.
    replaceFile(tokensFile, '[{"name": "half-written"');
    for (const server of servers) {
      const refusal = await eventually(async () => logs(server).find((l) => l.event === 'credentials_reload_refused'), 5_000, 25);
      expect(refusal).toMatchObject({ level: 'error', credential: 'tokens', file: tokensFile, message: expect.stringContaining('keeping the last good tokens') });
      expect(await whoami(server, fresh.token)).toBe(200);
      expect(await whoami(server, doomed.token)).toBe(401);
    }
    // A placeholder token is refused the same way (issue 24's checks apply to a reload too).
    writeTokens([operator, fresh, { name: 'lazy', token: 'changeme-changeme-changeme', role: 'operator' }]);
    for (const server of servers) {
      await eventually(async () => logs(server).filter((l) => l.event === 'credentials_reload_refused').length >= 2, 5_000, 25);
      expect(await whoami(server, 'changeme-changeme-changeme')).toBe(401);
    }
    writeTokens([operator, fresh]);
    for (const server of servers) {
      await eventually(async () => logs(server).filter((l) => l.event === 'credentials_reloaded' && l.credential === 'tokens').length >= 2, 5_000, 25);
    }

    // SIGHUP re-reads both files, changed or not.
    for (const server of servers) server.child.kill('SIGHUP');
    for (const server of servers) {
      const reloads = await eventually(async () => {
        const lines = logs(server).filter((l) => l.event === 'credentials_reloaded' && l.cause === 'sighup');
        return lines.length >= 2 && lines;
      }, 5_000, 25);
      expect(reloads.map((l) => l.credential).sort()).toEqual(['audit_key', 'tokens']);
      expect(await whoami(server, fresh.token)).toBe(200);
    }
  });

  test('the audit key rotated mid-run: the chain names both keys and verifies end to end on both instances', async () => {
    const revoke = (server: ServerProcess, label: string) =>
      httpClient(server.url).admin(operator.token).revoke(`reload/${label}`, { reason: label }).then((r) => expect(r.status).toBe(200));
    for (const [i, server] of servers.entries()) await revoke(server, `old-${i}`);

    // The new key first, the old one kept after it so the entries it sealed still verify.
    writeFileSync(keyFile, `${newKey}\n${oldKey}\n`, { mode: 0o600 });
    for (const server of servers) {
      await eventually(async () => logs(server).find((l) => l.event === 'credentials_reloaded' && l.credential === 'audit_key' && l.cause === 'change' && l.entries === 2), 5_000, 25);
    }
    for (const [i, server] of servers.entries()) await revoke(server, `new-${i}`);

    const viewer = httpClient(servers[0]!.url).admin(operator.token);
    const entries = ((await viewer.audit('?limit=100')).body.items as AuditEntry[]).reverse();
    expect(entries).toHaveLength(4);
    const keyIds = entries.map((e) => e.keyId);
    expect(new Set(keyIds).size).toBe(2);
    expect(keyIds[0]).toBe(keyIds[1]);
    expect(keyIds[2]).toBe(keyIds[3]);
    for (const server of servers) {
      expect((await httpClient(server.url).admin(fresh.token).verify()).body).toEqual({ ok: true, entries: 4, headHash: entries[3]!.hash });
    }

    // Dropping the old key too early is refused by verify, naming the first entry it sealed.
    const keyReloads = (server: ServerProcess) => logs(server).filter((l) => l.event === 'credentials_reloaded' && l.credential === 'audit_key');
    const seen = servers.map((server) => keyReloads(server).length);
    writeFileSync(keyFile, `${newKey}\n`, { mode: 0o600 });
    for (const [i, server] of servers.entries()) {
      await eventually(async () => keyReloads(server).length > seen[i]!, 5_000, 25);
      expect(keyReloads(server).at(-1)).toMatchObject({ entries: 1 });
      expect((await httpClient(server.url).admin(fresh.token).verify()).body).toMatchObject({ ok: false, brokenAt: '1', problem: expect.stringContaining(keyIds[0]!) });
    }
  });
});
