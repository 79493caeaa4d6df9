/**
 * A scoped client token's reach (SPEC "v3 — teams on one service"): a session acts only on keys
 * under the prefixes of the token that opened it. The check needs to know whose session it is, and
 * says nothing to a caller whose credential is wrong: the credential is checked by the store (with
 * no change) before a refusal is answered, and remembered once checked, so a session costs one
 * read per instance. The token's prefixes are looked up at each check, so a reloaded tokens file
 * applies at once.
 */
import { keyInScope } from '../../contract/policies.js';
import { ForbiddenError } from '../errors.js';
import type { LockStore, SessionCredential } from '../store/spi.js';
import { refused } from './session-refusal.js';

/** The prefixes a token may act on; undefined = unscoped. A token no longer in the file should answer []. */
export type ScopeOfToken = (tokenName: string) => readonly string[] | undefined;

/** Bounded like the verified-credentials cache: a session costs one entry until it ends. */
const MAX_REMEMBERED = 10_000;

interface KnownSession {
  tokenHash: string;
  /** Absent when the session was opened without a client token (an open server): unscoped. */
  openedBy: string | undefined;
}

export class SessionScopes {
  private readonly known = new Map<string, KnownSession>();

  constructor(
    private readonly store: Pick<LockStore, 'authenticateSession'>,
    private readonly scopeOfToken: ScopeOfToken,
  ) {}

  /** A session this instance opened: its credential and opener are known without a read. */
  remember(sessionId: string, tokenHash: string, openedBy: string | undefined): void {
    if (this.known.size >= MAX_REMEMBERED) this.known.delete(this.known.keys().next().value!);
    this.known.set(sessionId, { tokenHash, openedBy });
  }

  forget(sessionId: string): void {
    this.known.delete(sessionId);
  }

  /** Throws ForbiddenError when `key` is outside the reach of the token that opened the session. */
  async check(credential: SessionCredential, key: string): Promise<void> {
    const known = await this.whose(credential);
    if (known.openedBy === undefined) return;
    const prefixes = this.scopeOfToken(known.openedBy);
    if (keyInScope(prefixes, key)) return;
    throw new ForbiddenError(
      `session ${credential.sessionId} was opened with token ${JSON.stringify(known.openedBy)}, which reaches ` +
        `${prefixes && prefixes.length > 0 ? prefixes.map((p) => JSON.stringify(p)).join(', ') : 'no keys'}; ${JSON.stringify(key)} is outside it`,
    );
  }

  private async whose(credential: SessionCredential): Promise<KnownSession> {
    const known = this.known.get(credential.sessionId);
    if (known && known.tokenHash === credential.tokenHash) return known;
    const result = await this.store.authenticateSession(credential);
    if (result.kind !== 'authenticated') throw refused(result, credential.sessionId);
    const checked = { tokenHash: credential.tokenHash, openedBy: result.session.openedBy };
    this.remember(credential.sessionId, checked.tokenHash, checked.openedBy);
    return checked;
  }
}
