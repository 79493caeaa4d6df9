/**
 * Live credentials (issue 25): the tokens file and the audit key file are re-read when they change
 * and on SIGHUP, without a restart.
 *
 * A change is noticed three ways, whichever comes first: a watch on the file's directory (editors
 * and Kubernetes secret volumes replace a file by renaming, which a watch on the file itself misses),
 * a poll every POLL_MILLIS comparing the file's bytes (filesystems where watches say nothing: NFS,
 * some container mounts), and SIGHUP (re-read and re-applied even when the bytes are unchanged).
 * A change is applied once its bytes held still for SETTLE_MILLIS (a file written in place is torn
 * for a moment). With the poll alone a change is in force within POLL_MILLIS + SETTLE_MILLIS plus
 * one read; a removed token is refused from then on.
 *
 * A file that cannot be read or fails its checks (lock/admin-tokens.ts, lock/audit/audit-key.ts)
 * changes nothing: the last good contents stay in force, and the refusal is logged once per
 * distinct content, with the reason.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** How often the files' bytes are compared when no watch event came (well inside the 5 s promise). */
export const POLL_MILLIS = 1000;
/** Editors write a file in steps: one check after the last event of a burst. */
const SETTLE_MILLIS = 100;

export type CredentialName = 'tokens' | 'audit_key';
export type ReloadCause = 'change' | 'sighup';

export interface CredentialFile {
  credential: CredentialName;
  file: string;
  /**
   * Checks the file's bytes and puts them in force; throws, changing nothing, when they are refused.
   * Answers how many entries (tokens, keys) they hold. `bytes` are the very bytes that held still (the
   * loader must not read the file again: a write landing in between would be torn); undefined when
   * the file could not be read, so the loader's own read says why.
   */
  reload(bytes: Buffer | undefined): Promise<number>;
}

export interface CredentialReloadEvents {
  reloaded(fields: { credential: CredentialName; file: string; cause: ReloadCause; entries: number }): void;
  refused(fields: { credential: CredentialName; file: string; cause: ReloadCause; message: string }): void;
}

export interface CredentialReloader {
  /** Re-reads every file now and applies each that passes its checks (what SIGHUP does). */
  reloadAll(cause: ReloadCause): Promise<void>;
  stop(): void;
}

export function watchCredentialFiles(
  files: readonly CredentialFile[],
  events: CredentialReloadEvents,
  options: { pollMillis?: number; sighup?: boolean; /** false: the poll alone (tests of the fallback). */ watch?: boolean } = {},
): CredentialReloader {
  const watchers: FSWatcher[] = [];
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;

  const states = files.map((credential) => {
    let lastSeen: string | undefined;
    let queue: Promise<void> = Promise.resolve();
    let settle: NodeJS.Timeout | undefined;

    const check = async (cause: ReloadCause | 'start') => {
      let seen = await contentOf(credential.file);
      if (cause === 'change') {
        if (seen.digest === lastSeen) return;
        // A file written in place is empty or partial for a moment (truncate, then write): apply only
        // content that held still for SETTLE_MILLIS, else a torn read would be refused (and reported)
        // or put in force. Still changing: the next poll or watch event looks again.
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MILLIS));
        const settled = await contentOf(credential.file);
        if (stopped || settled.digest !== seen.digest) return;
        seen = settled;
      }
      lastSeen = seen.digest;
      try {
        const entries = await credential.reload(seen.bytes);
        // At start the file is put in force again, silently: a change made between the server's own
        // read and this one would otherwise wait for the next change.
        if (cause !== 'start') events.reloaded({ credential: credential.credential, file: credential.file, cause, entries });
      } catch (error) {
        events.refused({
          credential: credential.credential,
          file: credential.file,
          cause: cause === 'start' ? 'change' : cause,
          message: `${(error as Error).message}; keeping the last good ${credential.credential === 'tokens' ? 'tokens' : 'audit key'}`,
        });
      }
    };
    /** One check at a time per file, in the order asked. */
    const enqueue = (cause: ReloadCause | 'start') => {
      queue = queue.then(() => (stopped ? undefined : check(cause)));
      return queue;
    };
    const changed = () => {
      if (settle) clearTimeout(settle);
      settle = setTimeout(() => void enqueue('change'), SETTLE_MILLIS);
      settle.unref();
    };
    return { credential, enqueue, changed, cancel: () => settle && clearTimeout(settle) };
  });

  for (const state of states) {
    void state.enqueue('start');
    const name = path.basename(state.credential.file);
    try {
      if (options.watch === false) throw new Error('watching is off');
      const watcher = watch(path.dirname(state.credential.file), { persistent: false }, (_event, changedName) => {
        // Some platforms do not name the file; a secret volume swaps its `..data` link: check either way.
        if (!changedName || changedName === name || changedName.startsWith('..')) state.changed();
      });
      watcher.on('error', () => watcher.close()); // the poll carries on
      watchers.push(watcher);
    } catch {
      // No watch here (unsupported filesystem, no inotify instances left): the poll alone notices changes.
    }
    const poll = setInterval(() => void state.enqueue('change'), options.pollMillis ?? POLL_MILLIS);
    poll.unref();
    timers.push(poll);
  }

  const reloadAll = async (cause: ReloadCause) => {
    await Promise.all(states.map((state) => state.enqueue(cause)));
  };
  const onSighup = () => void reloadAll('sighup');
  if (options.sighup ?? true) process.on('SIGHUP', onSighup);

  return {
    reloadAll,
    stop() {
      stopped = true;
      for (const watcher of watchers) watcher.close();
      for (const timer of timers) clearInterval(timer);
      for (const state of states) state.cancel();
      process.off('SIGHUP', onSighup);
    },
  };
}

/** The file's bytes and their digest, or why they could not be read (a distinct "content" too). */
async function contentOf(file: string): Promise<{ digest: string; bytes?: Buffer }> {
  try {
    const bytes = await readFile(file);
    return { digest: digest(bytes), bytes };
  } catch (error) {
    return { digest: `unreadable: ${(error as Error).message}` };
  }
}

function digest(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
