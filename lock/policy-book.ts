/**
 * The policies the server enforces now: read from `HOLDFAST_POLICIES_FILE` at start (a bad file
 * stops the start), then re-read whenever the file changes, without a restart. A change is seen by
 * `fs.watch` on the file's directory (editors and Kubernetes ConfigMaps replace the file rather than
 * write into it, which a watch on the file itself would miss) and, because watches are not delivered
 * on every filesystem (NFS, some container mounts), by a poll of the file's text every second too:
 * an edit takes effect within a poll interval either way.
 *
 * A broken edit keeps the last good policies and is reported once (not once per poll); the core
 * reads `current()` on each request, so a good edit applies to the next request.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { LockPolicy } from '../contract/policies.js';
import { parsePolicies, readPoliciesFile } from './policies-file.js';

/** Well inside the 5 s an edit has to take effect (SPEC v3), and one small read a second. */
export const POLICIES_POLL_MILLIS = 1_000;

export type PolicyReload =
  | { outcome: 'loaded'; file: string; policies: readonly LockPolicy[] }
  | { outcome: 'rejected'; file: string; message: string };

export interface PolicyBookOptions {
  /** Told of every reload after the first read: a new set taken, or an edit refused. */
  onReload?: (reload: PolicyReload) => void;
  pollMillis?: number;
}

export class PolicyBook {
  private policies: readonly LockPolicy[];
  /** The text last looked at, good or bad: an unchanged file is not parsed (or reported) again. */
  private lastText: string | undefined;
  private watcher: FSWatcher | undefined;
  private readonly poll: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  /** A read asked for while one runs: it starts when that one ends, and every asker waits for it. */
  private next: Promise<void> | undefined;
  private closed = false;

  private constructor(
    readonly file: string | undefined,
    initial: readonly LockPolicy[],
    initialText: string | undefined,
    private readonly options: PolicyBookOptions,
  ) {
    this.policies = initial;
    this.lastText = initialText;
    if (file === undefined) return;
    try {
      // `..data` and friends: a Kubernetes ConfigMap volume swaps a symbolic link to publish an edit.
      this.watcher = watch(path.dirname(file), { persistent: false }, (_event, name) => {
        if (name === null || name === path.basename(file) || name.startsWith('..')) void this.reload();
      });
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No watch on this filesystem: the poll alone sees edits.
    }
    this.poll = setInterval(() => void this.reload(), options.pollMillis ?? POLICIES_POLL_MILLIS);
    this.poll.unref();
  }

  /** No file: no policies, ever (every key is under NO_POLICY). */
  static none(): PolicyBook {
    return new PolicyBook(undefined, Object.freeze([]), undefined, {});
  }

  /** Reads `file` now; throws PoliciesFileError, naming the line, when it is not valid. */
  static open(file: string, options: PolicyBookOptions = {}): PolicyBook {
    const { text, policies } = readPoliciesFile(file);
    return new PolicyBook(file, policies, text, options);
  }

  /** The policies in force: the last good read of the file. */
  current(): readonly LockPolicy[] {
    return this.policies;
  }

  /**
   * Re-reads the file (what a change or the poll does); resolves once a read that started after this
   * call has finished, so the caller sees the file as it was when it asked. One read at a time.
   */
  reload(): Promise<void> {
    const file = this.file;
    if (file === undefined || this.closed) return Promise.resolve();
    if (this.reading) {
      this.next ??= this.reading.then(() => {
        this.next = undefined;
        return this.reload();
      });
      return this.next;
    }
    this.reading = this.readOnce(file).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** Stops watching; a read still running reports nothing (the server's log may be closed by then). */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    if (this.poll) clearInterval(this.poll);
  }

  private async readOnce(file: string): Promise<void> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      const message = `cannot read the policies file: ${(error as Error).message}`;
      // Report a vanished file once, as a broken edit; the last good policies stay.
      if (this.lastText !== message) this.reject(file, message);
      this.lastText = message;
      return;
    }
    if (text === this.lastText) return;
    this.lastText = text;
    try {
      this.policies = parsePolicies(text, file);
    } catch (error) {
      this.reject(file, (error as Error).message);
      return;
    }
    if (!this.closed) this.options.onReload?.({ outcome: 'loaded', file, policies: this.policies });
  }

  private reject(file: string, message: string): void {
    if (!this.closed) this.options.onReload?.({ outcome: 'rejected', file, message });
  }
}
