/**
 * Page cursors, the same on every store: opaque to clients, base64url of the
 * last item's sort key. Anything this server could not have issued is a 400.
 */
import { CONTROL_CHARACTER, KEY_BYTES, SESSION_ID_PATTERN } from '../../contract/wire-rules.js';
import { ValidationFailedError } from '../errors.js';

export function encodeCursor(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined, pattern?: RegExp): string | null {
  if (!cursor) return null;
  const value = Buffer.from(cursor, 'base64url').toString('utf8');
  // Every cursor we issue decodes to a valid key or id: no control characters, no broken UTF-8.
  if (
    !/^[A-Za-z0-9_-]+$/.test(cursor) ||
    value.length === 0 ||
    CONTROL_CHARACTER.test(value) ||
    value.includes('\ufffd') ||
    (pattern && !pattern.test(value))
  ) {
    throw new ValidationFailedError('cursor is not one this server issued');
  }
  return value;
}

const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

/** A2's cursor: the last session id of the previous page. */
export function decodeSessionCursor(cursor: string | undefined): string | null {
  return decodeCursor(cursor, SESSION_ID);
}

/**
 * A1's cursor: the last key of the previous page. Only its length is checked beyond the codec's rules:
 * a key stored before a character was banned from new keys must still page.
 */
export function decodeKeyCursor(cursor: string | undefined): string | null {
  const key = decodeCursor(cursor);
  if (key !== null && Buffer.byteLength(key, 'utf8') > KEY_BYTES.max) throw new ValidationFailedError('cursor is not one this server issued');
  return key;
}
