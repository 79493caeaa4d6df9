/**
 * The optional audit key (HOLDFAST_AUDIT_KEY_FILE): with it the chain is keyed
 * (HMAC-SHA-256), so write access to the database alone cannot recompute a
 * chain someone altered. Refused (issue 24) when others can read the file
 * (lock/secret-files.ts) or when a key still holds a placeholder.
 *
 * Issue 25: the file may hold several keys, for rotation. A text file (printable ASCII) holds one
 * key per line: the first line is the current key (new entries and the head are sealed with it),
 * the lines after it are previous keys, kept so entries they sealed still verify. Any other file is
 * one binary key, as before (a trailing newline is not part of a key). Each key has at least 32
 * bytes. The server re-reads the file on change and on SIGHUP (server/credential-reload.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { assertPrivateFile } from '../secret-files.js';
import { GENERATE_HINT, placeholderIn } from '../token-strength.js';
import { createAuditKeyring, type AuditKeyring } from './chain.js';

export const MIN_AUDIT_KEY_BYTES = 32;

/**
 * Reads and checks the key file: the current key first, then the previous ones. Throws saying why.
 * `contents`: the file's bytes when the caller already read them (a reload checks the bytes that held still).
 */
export async function readAuditKeys(keyFile: string, contents?: Buffer): Promise<Buffer[]> {
  await assertPrivateFile(keyFile, 'the audit key');
  let raw: Buffer;
  try {
    raw = contents ?? (await readFile(keyFile));
  } catch (error) {
    throw new Error(`cannot read the audit key from ${keyFile}: ${(error as Error).message}`);
  }
  const keys = isText(raw) ? textLines(raw) : [raw.subarray(0, raw.length - trailingNewlineBytes(raw))];
  if (keys.length === 0) throw new Error(`the audit key file ${keyFile} holds no key`);
  keys.forEach((key, index) => {
    const which = keys.length === 1 ? 'the audit key' : index === 0 ? 'the current audit key (line 1)' : `the previous audit key on line ${index + 1}`;
    if (key.length < MIN_AUDIT_KEY_BYTES) {
      throw new Error(`${which} in ${keyFile} is ${key.length} bytes; it needs at least ${MIN_AUDIT_KEY_BYTES}`);
    }
    const placeholder = placeholderIn(key.toString('latin1'));
    if (placeholder) throw new Error(`${which} in ${keyFile} is a placeholder (it contains "${placeholder}"), not a secret; ${GENERATE_HINT}`);
  });
  return keys;
}

/** One key ring per key file in this process (see loadAuditSealer). */
const keyrings = new Map<string, AuditKeyring>();

/**
 * The key ring the store seals with and verify checks with; unkeyed without a file. Every load of
 * one file in this process answers the same ring, re-read: the store (opened by lock/store/open-store.ts
 * or a test) and the server's verify share it, so a reload rotates the key for both at once. A file
 * that fails the checks throws and leaves the ring as it was (the last good keys stay in force).
 */
export async function loadAuditSealer(keyFile: string | undefined, contents?: Buffer): Promise<AuditKeyring> {
  if (!keyFile) return createAuditKeyring();
  const keys = await readAuditKeys(keyFile, contents);
  const id = path.resolve(keyFile);
  const ring = keyrings.get(id) ?? createAuditKeyring(keys);
  ring.replaceKeys(keys);
  keyrings.set(id, ring);
  return ring;
}

/** Printable ASCII and line breaks only: a file of hex or base64 keys, one a line. */
function isText(raw: Buffer): boolean {
  for (const byte of raw) if (!(byte === 0x0a || byte === 0x0d || (byte >= 0x20 && byte < 0x7f))) return false;
  return true;
}

function textLines(raw: Buffer): Buffer[] {
  return raw
    .toString('latin1')
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.length > 0)
    .map((line) => Buffer.from(line, 'latin1'));
}

function trailingNewlineBytes(raw: Buffer): number {
  if (raw.at(-1) !== 0x0a) return 0;
  return raw.at(-2) === 0x0d ? 2 : 1;
}
