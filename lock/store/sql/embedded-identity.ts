/**
 * The embedded store's identity (issue 25): a random id in a file beside `pgdata`, written by
 * Holdfast, never inside the data PGlite dumps. `holdfast backup` copies `pgdata` only, so a
 * restored `pgdata` carries the identity recorded by the store it came from while the file names
 * this directory; `holdfast restore` writes a new id and advances in one go.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const STORE_ID_FILE = 'store-id';

/** Reads the directory's store id, creating it (owner-only) on the first start. */
export function embeddedIdentity(ownerDir: string): () => Promise<string> {
  const file = path.join(ownerDir, STORE_ID_FILE);
  return async () => {
    try {
      return `embedded:${(await readFile(file, 'utf8')).trim()}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const id = randomBytes(16).toString('hex');
    try {
      await writeFile(file, `${id}\n`, { mode: 0o600, flag: 'wx' });
      return `embedded:${id}`;
    } catch (error) {
      // Another start wrote it first: its id stands.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return `embedded:${(await readFile(file, 'utf8')).trim()}`;
    }
  };
}

/** A new store id for the directory (a restore): the restored data then names another place. */
export async function replaceEmbeddedIdentity(ownerDir: string): Promise<void> {
  await writeFile(path.join(ownerDir, STORE_ID_FILE), `${randomBytes(16).toString('hex')}\n`, { mode: 0o600 });
}
