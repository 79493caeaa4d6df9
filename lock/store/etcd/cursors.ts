/** Page cursors are opaque to clients: base64url of the last item's name; anything else is a 400. */
import { ValidationFailedError } from '../../errors.js';

export function encodeCursor(value: string | null): string | null {
  return value === null ? null : Buffer.from(value, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined, pattern?: RegExp): string | undefined {
  if (!cursor) return undefined;
  const value = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[A-Za-z0-9_-]+$/.test(cursor) || value.length === 0 || (pattern && !pattern.test(value))) {
    throw new ValidationFailedError('cursor is not one this server issued');
  }
  return value;
}
