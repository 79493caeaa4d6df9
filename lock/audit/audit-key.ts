/**
 * The optional audit key (HOLDFAST_AUDIT_KEY_FILE): with it the chain is keyed
 * (HMAC-SHA-256), so write access to the database alone cannot recompute a
 * chain someone altered. The file holds at least 32 bytes (a trailing newline
 * is not part of the key); it is read once at start. Refused (issue 24) when others can read the
 * file (lock/secret-files.ts) or when it still holds a placeholder.
 */
import { readFile } from 'node:fs/promises';
import { assertPrivateFile } from '../secret-files.js';
import { GENERATE_HINT, placeholderIn } from '../token-strength.js';
import { createAuditSealer, type AuditSealer } from './chain.js';

export const MIN_AUDIT_KEY_BYTES = 32;

export async function loadAuditSealer(keyFile: string | undefined): Promise<AuditSealer> {
  if (!keyFile) return createAuditSealer();
  await assertPrivateFile(keyFile, 'the audit key');
  let raw: Buffer;
  try {
    raw = await readFile(keyFile);
  } catch (error) {
    throw new Error(`cannot read the audit key from ${keyFile}: ${(error as Error).message}`);
  }
  const key = raw.subarray(0, raw.length - trailingNewlineBytes(raw));
  if (key.length < MIN_AUDIT_KEY_BYTES) {
    throw new Error(`the audit key in ${keyFile} is ${key.length} bytes; it needs at least ${MIN_AUDIT_KEY_BYTES}`);
  }
  const placeholder = placeholderIn(key.toString('latin1'));
  if (placeholder) throw new Error(`the audit key in ${keyFile} is a placeholder (it contains "${placeholder}"), not a secret; ${GENERATE_HINT}`);
  return createAuditSealer(key);
}

function trailingNewlineBytes(raw: Buffer): number {
  if (raw.at(-1) !== 0x0a) return 0;
  return raw.at(-2) === 0x0d ? 2 : 1;
}
