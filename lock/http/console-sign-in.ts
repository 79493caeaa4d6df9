/**
 * Console sign-in kept by the lock server (issue 25, console replicas): one-time sign-in codes and
 * console sessions as console records in the store (lock/store/console-records.ts), so every
 * console replica — and a restarted one — sees the same codes and sessions, a code redeems once
 * fleet-wide, and a sign-out is refused by every replica at once.
 *
 * What is kept, and what is not:
 * - A code: its id (the first CODE_ID_CHARS of the code, the record's id), a SHA-256 digest of the
 *   rest (the secret), the issuing token's name and role, and the token *sealed by the console*
 *   with a secret the lock server never sees. Not the code, not the token.
 * - A console session: a record whose id is a digest of the token's name and the session id, so
 *   only a request carrying that token finds it (checking or ending someone else's session finds
 *   nothing) and reading the store does not give out usable session ids.
 * - Wrong secrets for a pending code: one record each (`code-miss`, id `{codeId}/{random}`) living
 *   MISS_WINDOW_MILLIS, counted before the secret is compared and given back when it was right, so
 *   parallel guesses on many instances cannot slip past the count together.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ConsoleRecord, ConsoleRecordStore } from '../store/console-records.js';

export const CONSOLE_SIGN_IN = {
  codeChars: 32,
  codeIdChars: 8,
  codeTtlMillis: 5 * 60_000,
  maxCodesPerIssuer: 8,
  maxCodes: 1_024,
  missWindowMillis: 60_000,
  maxMissesPerCode: 5,
  /** 24 random bytes in base64url. */
  sessionIdChars: 32,
  sessionTtlMillis: 12 * 60 * 60_000,
  maxSessionsPerIssuer: 100,
  maxSealedTokenChars: 8_192,
} as const;

const KIND = { code: 'code', miss: 'code-miss', session: 'console-session' } as const;

export interface Issuer {
  name: string;
  role: 'viewer' | 'operator';
}

interface PendingCode extends Issuer {
  secretDigest: string;
  sealedToken: string;
  /** Mint order among codes of one expiry millisecond: this instance's clock, then its count. */
  mintedAt?: number;
  mintSeq?: number;
}

/** Codes minted by this instance, so the oldest of a millisecond is known (caps drop the oldest). */
let mintSeq = 0;

export type Redemption =
  | ({ outcome: 'SIGNED_IN'; sealedToken: string } & Issuer)
  | { outcome: 'LOCKED'; retryAfterMillis: number }
  | { outcome: 'REFUSED' };

export class ConsoleSignIn {
  constructor(
    private readonly records: ConsoleRecordStore,
    private readonly now: () => number = Date.now,
  ) {}

  async mintCode(issuer: Issuer, sealedToken: string): Promise<{ code: string; expiresAt: number }> {
    const code = randomBytes((CONSOLE_SIGN_IN.codeChars * 3) / 4).toString('base64url');
    const pending: PendingCode = {
      name: issuer.name,
      role: issuer.role,
      secretDigest: digest(secretOf(code)),
      sealedToken,
      mintedAt: this.now(),
      mintSeq: mintSeq++,
    };
    const record = await this.records.put({ kind: KIND.code, id: codeIdOf(code), value: JSON.stringify(pending), ttlMillis: CONSOLE_SIGN_IN.codeTtlMillis });
    await this.keepCodesWithinCaps(issuer.name, record.id);
    return { code, expiresAt: record.expiresAt };
  }

  async redeemCode(code: string): Promise<Redemption> {
    const id = codeIdOf(code);
    const found = await this.records.get(KIND.code, id);
    if (!found) return { outcome: 'REFUSED' };
    // Charged before the compare, given back when right: a locked code answers LOCKED to the right secret too.
    const charge = `${id}/${randomBytes(12).toString('base64url')}`;
    await this.records.put({ kind: KIND.miss, id: charge, value: '', ttlMillis: CONSOLE_SIGN_IN.missWindowMillis });
    const misses = await this.records.list(KIND.miss, `${id}/`, 1_000);
    const others = misses.filter((miss) => miss.id !== charge);
    if (others.length >= CONSOLE_SIGN_IN.maxMissesPerCode) {
      await this.records.delete(KIND.miss, charge);
      const until = others[others.length - CONSOLE_SIGN_IN.maxMissesPerCode]!.expiresAt;
      return { outcome: 'LOCKED', retryAfterMillis: Math.max(1, until - this.now()) };
    }
    const pending = parse(found);
    if (!timingSafeEqual(Buffer.from(pending.secretDigest, 'hex'), Buffer.from(digest(secretOf(code)), 'hex'))) return { outcome: 'REFUSED' };
    await this.records.delete(KIND.miss, charge);
    const taken = await this.records.take(KIND.code, id);
    // Someone redeemed it between our read and our take: it was theirs.
    if (!taken) return { outcome: 'REFUSED' };
    const kept = parse(taken);
    return { outcome: 'SIGNED_IN', name: kept.name, role: kept.role, sealedToken: kept.sealedToken };
  }

  async openSession(issuer: Issuer): Promise<{ consoleSessionId: string; expiresAt: number }> {
    const consoleSessionId = randomBytes((CONSOLE_SIGN_IN.sessionIdChars * 3) / 4).toString('base64url');
    const record = await this.records.put({
      kind: KIND.session,
      id: sessionRecordId(issuer.name, consoleSessionId),
      value: JSON.stringify({ name: issuer.name }),
      ttlMillis: CONSOLE_SIGN_IN.sessionTtlMillis,
    });
    await this.keepSessionsWithinCap(issuer.name, record.id);
    return { consoleSessionId, expiresAt: record.expiresAt };
  }

  /** The session's expiry while it is live and belongs to this token's name; else null. */
  async checkSession(name: string, consoleSessionId: string): Promise<{ expiresAt: number } | null> {
    const record = await this.records.get(KIND.session, sessionRecordId(name, consoleSessionId));
    return record ? { expiresAt: record.expiresAt } : null;
  }

  async closeSession(name: string, consoleSessionId: string): Promise<void> {
    await this.records.delete(KIND.session, sessionRecordId(name, consoleSessionId));
  }

  /*
   * The caps are kept *after* the put: concurrent puts (on any instances) each list after their own
   * put, so the last list of them sees every one and trims to the cap. Trimming before the put
   * would let requests sent together all see room and all put. A list cut short by its limit is
   * read again until the cap holds. The record just put counts as the newest whatever its expiry
   * says (etcd's is the answering server's clock, which may run behind another's): a mint or a
   * sign-in never drops what it is about to answer.
   */

  /** A token keeps at most maxSessionsPerIssuer console sessions: the soonest to expire go first. */
  private async keepSessionsWithinCap(name: string, justPut: string): Promise<void> {
    const prefix = `${digest(`issuer\n${name}`)}/`;
    const limit = CONSOLE_SIGN_IN.maxSessionsPerIssuer + 16;
    for (;;) {
      const live = await this.records.list(KIND.session, prefix, limit);
      const others = live.filter((record) => record.id !== justPut);
      for (const old of others.slice(0, Math.max(0, live.length - CONSOLE_SIGN_IN.maxSessionsPerIssuer))) await this.records.delete(KIND.session, old.id);
      if (live.length < limit) return;
    }
  }

  /** An issuer keeps at most maxCodesPerIssuer pending codes; all issuers together at most maxCodes. */
  private async keepCodesWithinCaps(name: string, justPut: string): Promise<void> {
    const limit = CONSOLE_SIGN_IN.maxCodes + 64;
    for (;;) {
      const listed = await this.records.list(KIND.code, '', limit);
      const pending = listed
        .map((record) => ({ record, code: parse(record) }))
        .sort((a, b) => Number(a.record.id === justPut) - Number(b.record.id === justPut) || byMintOrder(a, b));
      const byIssuer = new Map<string, ConsoleRecord[]>();
      for (const { record, code } of pending) byIssuer.set(code.name, [...(byIssuer.get(code.name) ?? []), record]);
      const drop = async (list: ConsoleRecord[]) => {
        const oldest = list.shift()!;
        await this.records.delete(KIND.code, oldest.id);
      };
      const mine = byIssuer.get(name) ?? [];
      while (mine.length > CONSOLE_SIGN_IN.maxCodesPerIssuer) await drop(mine);
      let total = [...byIssuer.values()].reduce((sum, list) => sum + list.length, 0);
      while (total > CONSOLE_SIGN_IN.maxCodes) {
        await drop([...byIssuer.values()].reduce((a, b) => (b.length > a.length ? b : a)));
        total -= 1;
      }
      if (listed.length < limit) return;
    }
  }
}

export function codeIdOf(code: string): string {
  return code.slice(0, CONSOLE_SIGN_IN.codeIdChars);
}

function secretOf(code: string): string {
  return code.slice(CONSOLE_SIGN_IN.codeIdChars);
}

function sessionRecordId(name: string, consoleSessionId: string): string {
  return `${digest(`issuer\n${name}`)}/${digest(`console session\n${consoleSessionId}`)}`;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Oldest first: soonest expiry, then (within a millisecond) the order they were minted in. */
function byMintOrder(a: { record: ConsoleRecord; code: PendingCode }, b: { record: ConsoleRecord; code: PendingCode }): number {
  return (
    a.record.expiresAt - b.record.expiresAt || (a.code.mintedAt ?? 0) - (b.code.mintedAt ?? 0) || (a.code.mintSeq ?? 0) - (b.code.mintSeq ?? 0)
  );
}

function parse(record: ConsoleRecord): PendingCode {
  return JSON.parse(record.value) as PendingCode;
}
