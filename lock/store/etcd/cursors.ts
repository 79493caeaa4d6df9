/** The etcd store pages with the stores' shared cursor codec; `null` means no more pages. */
import { decodeCursor as decodeShared, encodeCursor as encodeShared } from '../cursor.js';

export function encodeCursor(value: string | null): string | null {
  return value === null ? null : encodeShared(value);
}

export function decodeCursor(cursor: string | undefined, pattern?: RegExp): string | undefined {
  return decodeShared(cursor, pattern) ?? undefined;
}
