/**
 * Issue 24 items 3 and 4: no default secrets, no secret files others can read.
 * - Item 3: a tokens file with a shipped placeholder (the `REPLACE-ME-…` tokens that
 *   deploy/holdfast-tokens.example.json ships, and any other) or a token weaker than 128 bits is
 *   refused, naming the entry and why, without printing the token; strong generated tokens pass.
 * - Item 4: the tokens file, the audit key, the database password file and the CLI's token files
 *   (`--token-file`, the local operator token file) are refused when group or others can read them,
 *   with a message naming the file and `chmod 600 <file>`; 0600 passes, and so does a root-owned
 *   0440/0640 file (a Kubernetes secret volume with fsGroup); a file owned by another user is refused.
 * - `holdfast server` itself refuses to start on the shipped example tokens file or a 0644 one,
 *   saying why on stderr before it serves anything.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseToken, readTokenFile } from '../../cli/credentials.js';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { assertPrivateFile } from '../../lock/secret-files.js';
import { databaseUrl } from '../../lock/store/open-store.js';
import { estimatedTokenBits, MIN_TOKEN_BITS, tokenWeakness } from '../../lock/token-strength.js';
import { BIN } from '../support/server-process.js';

const root = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(content: string, mode = 0o600): string {
  const name = path.join(dir, `f${files++}`);
  writeFileSync(name, content, { mode });
  chmodSync(name, mode); // whatever the umask
  return name;
}
const tokensJson = (...tokens: string[]) => JSON.stringify(tokens.map((token, i) => ({ name: `t${i}`, token, role: i === 0 ? 'operator' : 'viewer' })));
const strong = () => randomBytes(32).toString('hex');
/** Giving a file to another user (chown) needs root; elsewhere those cases are skipped. */
const asRoot = process.getuid?.() === 0;

describe('no default secrets (issue 24 item 3)', () => {
  it('the shipped example tokens file is refused at load, naming each placeholder entry, never printing a token', async () => {
    const example = readFileSync(path.join(root, 'deploy/holdfast-tokens.example.json'), 'utf8');
    const shipped = (JSON.parse(example) as { token: string }[]).map((e) => e.token);
    expect(shipped.length).toBeGreaterThan(0);
    const copy = file(example);
    const error = await AdminTokens.fromFile(copy).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`refusing the tokens file ${copy}`);
    shipped.forEach((_token, i) => expect(message).toContain(`entry ${i} (`));
    expect(message).toMatch(/is a placeholder .*openssl rand -hex 32/);
    for (const token of shipped) expect(message).not.toContain(token);
  });

  it('placeholders in any spelling are refused, however long', () => {
    for (const token of ['REPLACE-ME-operator-token-at-least-16-chars', 'replace_me_0123456789abcdef0123456789abcdef', 'changeme-9f8e7d6c5b4a39281706f5e4d3c2b1a0', '<operator-token-from-your-vault-0123456789>']) {
      expect(tokenWeakness(token), token).toMatch(/is a placeholder/);
    }
  });

  it('tokens weaker than 128 bits are refused with the estimate; 128 bits and more pass', () => {
    expect(tokenWeakness('a1b2c3d4e5f6a7b8')).toMatch(/about 64 bits .* at least 128 needed/); // 16 hex digits
    expect(tokenWeakness('0123456789abcdef0123456789abcde')).toMatch(/about 124 bits/); // 31 hex digits
    expect(tokenWeakness('op-short-token-16')).toMatch(/too weak/);
    expect(tokenWeakness(`client-${'c'.repeat(24)}`)).toMatch(/only 7 distinct characters/);
    expect(tokenWeakness('a'.repeat(200))).toMatch(/only 1 distinct characters/);
    expect(tokenWeakness(randomBytes(16).toString('hex'))).toBeNull(); // openssl rand -hex 16: 128 bits
    expect(tokenWeakness(strong())).toBeNull(); // openssl rand -hex 32
    expect(tokenWeakness(randomBytes(32).toString('base64'))).toBeNull(); // openssl rand -base64 32
    expect(tokenWeakness(`op-${randomBytes(16).toString('hex')}`)).toBeNull(); // the test servers' tokens
    expect(estimatedTokenBits('f'.repeat(32))).toBe(MIN_TOKEN_BITS);
  });

  it('one weak entry refuses the whole file, naming that entry and its role', async () => {
    const error = await AdminTokens.fromFile(file(tokensJson(strong(), 'viewer-token-16ch'))).catch((e: Error) => e);
    expect((error as Error).message).toMatch(/entry 1 \("t1", viewer\): its token is too weak/);
    expect((error as Error).message).not.toContain('entry 0');
    expect((await AdminTokens.fromFile(file(tokensJson(strong(), strong())))).size).toBe(2);
  });

  it('an audit key that is still a placeholder is refused', async () => {
    const error = await loadAuditSealer(file('REPLACE-ME-with-openssl-rand-hex-32-output-0000000000\n')).catch((e: Error) => e);
    expect((error as Error).message).toMatch(/audit key .* is a placeholder/);
  });
});

describe('secret files others can read are refused (issue 24 item 4)', () => {
  const fix = (f: string) => `chmod 600 ${f}`;

  it('a 0644 tokens file: refused naming the file and the chmod that fixes it; 0600 loads', async () => {
    const loose = file(tokensJson(strong()), 0o644);
    const error = await AdminTokens.fromFile(loose).catch((e: Error) => e);
    expect((error as Error).message).toContain(`refusing the tokens file ${loose}`);
    expect((error as Error).message).toContain('mode 0644');
    expect((error as Error).message).toContain(fix(loose));
    chmodSync(loose, 0o600);
    expect((await AdminTokens.fromFile(loose)).size).toBe(1);
  });

  it.runIf(asRoot)('an audit key readable by others (0604) or by its group (0640, owned by a non-root user) is refused', async () => {
    const key = file(`${strong()}\n`, 0o604);
    await expect(loadAuditSealer(key)).rejects.toThrow(fix(key));
    chmodSync(key, 0o600);
    await expect(loadAuditSealer(key)).resolves.toBeDefined();
    // As a non-root user would see its own group-readable key (the check runs for uid 4242).
    const grouped = file(`${strong()}\n`, 0o640);
    chownSync(grouped, 4242, 4242);
    await expect(assertPrivateFile(grouped, 'the audit key', { uid: 4242 })).rejects.toThrow(/its group .* chmod 600/);
  });

  it('CLI token files: --token-file and the local operator token file, 0644 refused before anything is sent', async () => {
    const tokenFile = file(`${strong()}\n`, 0o644);
    await expect(readTokenFile(tokenFile)).rejects.toThrow(`refusing the token file ${tokenFile}`);
    await expect(readTokenFile(tokenFile)).rejects.toThrow(fix(tokenFile));
    const dataDir = mkdtempSync(path.join(dir, 'data-'));
    const local = path.join(dataDir, 'admin-tokens.json');
    writeFileSync(local, tokensJson(strong()));
    chmodSync(local, 0o644);
    await expect(chooseToken({ url: 'http://127.0.0.1:1', dataDir })).rejects.toThrow(fix(local));
  });

  it.runIf(asRoot)('root-owned and group-readable (a Kubernetes secret volume with fsGroup: 0440) passes; others-readable does not', async () => {
    const mounted = file(tokensJson(strong()), 0o440);
    chownSync(mounted, 0, 4242);
    await expect(assertPrivateFile(mounted, 'the tokens file', { uid: 1000 })).resolves.toBeUndefined();
    chmodSync(mounted, 0o444);
    await expect(assertPrivateFile(mounted, 'the tokens file', { uid: 1000 })).rejects.toThrow(/every other user/);
  });

  it.runIf(asRoot)("a file owned by another (non-root) user is refused: that user can rewrite it", async () => {
    const theirs = file(tokensJson(strong()), 0o600);
    chownSync(theirs, 4343, 4343);
    await expect(assertPrivateFile(theirs, 'the tokens file', { uid: 1000 })).rejects.toThrow(/owned by uid 4343, not by this user \(uid 1000\) or root/);
  });

  it('pipes and devices are not judged (--token-file <(pass show holdfast))', async () => {
    await expect(assertPrivateFile('/dev/null', 'the token file')).resolves.toBeUndefined();
  });
});

describe('the database password file (HOLDFAST_DATABASE_PASSWORD_FILE)', () => {
  it('completes a DATABASE_URL without a password; 0644 and a second password in the URL are refused', async () => {
    const passwordFile = file('p@ss:w/rd%\n');
    const url = new URL(await databaseUrl({ DATABASE_URL: 'postgres://holdfast@db:5432/holdfast', HOLDFAST_DATABASE_PASSWORD_FILE: passwordFile }));
    expect(decodeURIComponent(url.password)).toBe('p@ss:w/rd%');
    expect(url.username).toBe('holdfast');
    await expect(databaseUrl({ DATABASE_URL: 'postgres://holdfast:other@db/holdfast', HOLDFAST_DATABASE_PASSWORD_FILE: passwordFile })).rejects.toThrow(/keep it in one place/);
    chmodSync(passwordFile, 0o644);
    await expect(databaseUrl({ DATABASE_URL: 'postgres://holdfast@db/holdfast', HOLDFAST_DATABASE_PASSWORD_FILE: passwordFile })).rejects.toThrow(`chmod 600 ${passwordFile}`);
  });
});

describe('holdfast server refuses to start on them', () => {
  function startServer(tokensFile: string) {
    return spawnSync(process.execPath, [BIN, 'server'], {
      env: { ...process.env, HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: mkdtempSync(path.join(dir, 'data-')), HOLDFAST_PORT: '0', HOLDFAST_ADMIN_TOKENS_FILE: tokensFile },
      encoding: 'utf8',
      timeout: 120_000,
    });
  }

  it('the shipped example tokens file: exit 1, the placeholder named on stderr, never serving', () => {
    const example = file(readFileSync(path.join(root, 'deploy/holdfast-tokens.example.json'), 'utf8'));
    const run = startServer(example);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`holdfast: refusing the tokens file ${example}: entry 0 \\("on-call", operator\\): its token is a placeholder`));
    expect(run.stderr + run.stdout).not.toContain('serving on');
    expect(run.stderr + run.stdout).not.toContain('REPLACE-ME-operator-token');
  }, 120_000);

  it('a tokens file others can read: exit 1 with the chmod that fixes it', () => {
    const loose = file(tokensJson(strong()), 0o644);
    const run = startServer(loose);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toContain(`holdfast: refusing the tokens file ${loose}: its mode 0644`);
    expect(run.stderr).toContain(`chmod 600 ${loose}`);
    expect(run.stderr + run.stdout).not.toContain('serving on');
  }, 120_000);
});
