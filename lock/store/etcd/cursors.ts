/** The etcd store pages with the stores' shared cursor codec; `null` means no more pages. */
import { decodeCursor as decodeShared, decodeKeyCursor as decodeSharedKey, decodeSessionCursor as decodeSharedSession, encodeCursor as encodeShared } from '../cursor.js';

export function encodeCursor(value: string | null): string | null {
  return value === null ? null : encodeShared(value);
}

export function decodeCursor(cursor: string | undefined, pattern?: RegExp): string | undefined {
  return decodeShared(cursor, pattern) ?? undefined;
}

export function decodeSessionCursor(cursor: string | undefined): string | undefined {
  return decodeSharedSession(cursor) ?? undefined;
}

export function decodeKeyCursor(cursor: string | undefined): string | undefined {
  return decodeSharedKey(cursor) ?? undefined;
}
