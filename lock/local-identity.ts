/**
 * The local server's identity (issue 24 item 5): the CLI sends the embedded store's local operator
 * token only to a server that proves it is the one that wrote it.
 *
 * The embedded server that creates `$HOLDFAST_DATA_DIR/admin-tokens.json` also creates, beside it,
 * `server-identity.key`: 32 random bytes (hex), 0600 in the 0700 data directory, so only the
 * server's user — who is also the CLI's user, or the CLI could not read the token either — can read
 * it. Before it sends the token, the CLI asks `POST /v1/local/identity {nonce}` (no credentials),
 * and the server answers `{proof}`:
 *
 *   proof = base64url(HMAC-SHA-256(key, "holdfast-local-identity-v1\n" + nonce + "\n" + address + "\n" + port))
 *
 * where nonce is 32 fresh random bytes (base64url) and address/port are the local end of the TCP
 * connection the question arrived on, as the server's socket sees it. The CLI computes the same
 * with the address and port of its URL (a literal loopback address) and sends the token only if
 * they match. So:
 * - a program that is not the server (another user's listener on the port) cannot answer: it
 *   cannot read the key;
 * - it cannot relay the question to the real server either: the real server answers for the
 *   address and port it was reached on, not the impostor's;
 * - an answer cannot be replayed: every question has a new nonce.
 * What remains: the request that carries the token may travel on a new connection. A server
 * that stops in the milliseconds between the proof and the request, and a listener that takes its
 * port in that window, would get it; the listener would have to be already waiting for that port.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { assertPrivateFile } from './secret-files.js';

export const IDENTITY_FILE = 'server-identity.key';
export const IDENTITY_ROUTE = '/v1/local/identity';
const KEY_BYTES = 32;
const CONTEXT = 'holdfast-local-identity-v1';

/** A question's nonce: 32 random bytes, base64url (43 characters). */
export const NONCE_PATTERN = '^[A-Za-z0-9_-]{43}$';

export function newNonce(): string {
  return randomBytes(KEY_BYTES).toString('base64url');
}

export function identityKeyFile(dataDir: string): string {
  return path.resolve(dataDir, IDENTITY_FILE);
}

/** Reads the key (refusing a file others can read); throws when it is missing or malformed. */
export async function readIdentityKey(file: string): Promise<Buffer> {
  await assertPrivateFile(file, 'the local server identity key');
  const text = (await readFile(file, 'utf8')).trim();
  if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`the local server identity key ${file} is not 64 hex digits; delete it and restart the server`);
  return Buffer.from(text, 'hex');
}

/**
 * The key of the embedded server with a local operator token: read, or created on the first start
 * (written to a temporary name and linked into place, so nobody ever reads half a key).
 */
export async function ensureIdentityKey(dataDir: string): Promise<Buffer> {
  const file = identityKeyFile(dataDir);
  try {
    return await readIdentityKey(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(temporary, `${randomBytes(KEY_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  return readIdentityKey(file);
}

/** The answer to `nonce` for a connection that arrived on `address`:`port`. */
export function identityProof(key: Buffer, nonce: string, address: string, port: number): string {
  return createHmac('sha256', key).update(`${CONTEXT}\n${nonce}\n${normalAddress(address)}\n${port}`).digest('base64url');
}

/** Constant-time comparison of an answer with the expected proof. */
export function proofMatches(expected: string, answered: unknown): boolean {
  if (typeof answered !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(answered);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `[::1]` → `::1`, `::ffff:127.0.0.1` → `127.0.0.1` (an IPv4 client of a dual-stack socket), lower case. */
export function normalAddress(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped) return mapped[1]!;
  // ::ffff:7f00:1 is the hex spelling of ::ffff:127.0.0.1.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(bare);
  if (hex && isIP(bare) === 6) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return bare;
}
