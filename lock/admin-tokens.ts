/**
 * Bearer tokens (`HOLDFAST_ADMIN_TOKENS_FILE`, JSON `[{name, token, role, prefixes?}]`): roles
 * `viewer` and `operator` for admin routes, `client` for L1/L7 (v2: once any client
 * entry exists, L1 and L7 need a token of any role; client tokens never reach admin routes).
 * Lookups compare SHA-256 digests in constant time against every token, so
 * neither a token's content nor which token matched leaks through timing.
 *
 * Issue 24: the file is refused when others can read it (lock/secret-files.ts), and so is any
 * token that is a shipped placeholder or weaker than 128 bits (lock/token-strength.ts): the server
 * says which entry and why at start, and does not start.
 *
 * Issue 26: `prefixes` scopes a token to the keys under them (contract/policies.ts `keyInScope`);
 * lock/http enforces it per route, the core on acquires of sessions the token opened. Each prefix
 * follows the lock-key rule (contract/wire-rules.ts) and is kept NFC, the form keys are stored in.
 * Issue 25: the file is re-read on change and on SIGHUP (server/credential-reload.ts); a file that
 * fails these checks then keeps the last good entries in force.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { checkLockKey } from '../contract/wire-rules.js';
import { assertPrivateFile } from './secret-files.js';
import { tokenWeakness } from './token-strength.js';

export type AdminRole = 'viewer' | 'operator';
export type TokenRole = AdminRole | 'client';

export interface AdminIdentity {
  name: string;
  role: TokenRole;
  /** The key prefixes this token may act on; absent = unscoped (every key). */
  prefixes?: readonly string[];
}

export interface TokenEntry {
  name: string;
  token: string;
  role: TokenRole;
  prefixes?: readonly string[];
}

const tokenFileSchema = z
  .array(
    z.object({
      name: z.string().min(1).max(128),
      token: z.string().min(16, 'tokens must be at least 16 characters').max(512),
      role: z.enum(['viewer', 'operator', 'client']),
      prefixes: z.array(z.string()).min(1, 'prefixes, when given, must name at least one prefix (leave it out for an unscoped token)').optional(),
    }),
  )
  .min(1);

export class AdminTokens {
  // Not readonly: replaceWith swaps them when the file is re-read (issue 25).
  private entries: { identity: AdminIdentity; digest: Buffer }[];

  /** True when the file holds `client` entries: L1 and L7 then need a bearer token. */
  clientsRequired: boolean;

  constructor(tokens: TokenEntry[]) {
    this.entries = tokens.map((t) => ({
      identity: { name: t.name, role: t.role, ...(t.prefixes !== undefined ? { prefixes: [...t.prefixes] } : {}) },
      digest: digest(t.token),
    }));
    this.clientsRequired = tokens.some((t) => t.role === 'client');
  }

  /**
   * Issue 25: takes the entries of a re-read tokens file, in one synchronous step, so a request is
   * checked against the old file or the new one, never a mix; a removed token is refused from the
   * next request on. The server's reload (server/credential-reload.ts) calls it.
   */
  replaceWith(next: AdminTokens): void {
    this.entries = next.entries;
    this.clientsRequired = next.clientsRequired;
  }

  get size(): number {
    return this.entries.length;
  }

  identify(presented: string): AdminIdentity | null {
    const candidate = digest(presented);
    let found: AdminIdentity | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, candidate) && !found) found = entry.identity;
    }
    return found;
  }

  /**
   * The prefixes of the token named `name` now (the core asks by the name a session remembers):
   * undefined for an unscoped token, and none at all (`[]`) for a name no longer in the file, so a
   * removed scoped token's sessions do not turn unscoped.
   */
  prefixesOf(name: string): readonly string[] | undefined {
    const entry = this.entries.find((e) => e.identity.name === name);
    return entry ? entry.identity.prefixes : [];
  }

  /** `contents`: the file's bytes when the caller already read them (a reload checks the bytes that held still); else it is read here. */
  static async fromFile(file: string, contents?: Buffer): Promise<AdminTokens> {
    await assertPrivateFile(file, 'the tokens file');
    let raw: unknown;
    try {
      raw = JSON.parse((contents ?? (await readFile(file))).toString('utf8'));
    } catch (error) {
      throw new Error(`cannot read admin tokens from ${file}: ${(error as Error).message}`);
    }
    const parsed = tokenFileSchema.safeParse(raw);
    if (!parsed.success) {
      throw new Error(`invalid admin tokens file ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    const weak = parsed.data.flatMap((entry, index) => {
      const why = tokenWeakness(entry.token);
      return why ? [`entry ${index} (${JSON.stringify(entry.name)}, ${entry.role}): its token ${why}`] : [];
    });
    if (weak.length > 0) throw new Error(`refusing the tokens file ${file}: ${weak.join('; ')}`);
    const scoped = scopeProblems(parsed.data);
    if (scoped.problems.length > 0) throw new Error(`invalid admin tokens file ${file}: ${scoped.problems.join('; ')}`);
    return new AdminTokens(scoped.entries);
  }

  /**
   * The embedded default's first start: one operator token in the data dir, so a
   * new user can act from the console; a configured deployment never gets one.
   */
  static async ensureLocalOperator(dataDir: string): Promise<{ file: string; created: boolean }> {
    const file = path.resolve(dataDir, 'admin-tokens.json');
    try {
      await readFile(file);
      return { file, created: false };
    } catch {
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const tokens = [{ name: 'local-operator', token: randomBytes(24).toString('base64url'), role: 'operator' }];
      await writeFile(file, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600, flag: 'wx' }).catch((error) => {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      });
      return { file, created: true };
    }
  }
}

/**
 * Each entry's prefixes checked by the lock-key rule and kept in NFC, or why not, naming the entry.
 * Two entries of one name must agree on their scope: sessions remember the name, not the entry.
 */
export function scopeProblems(entries: TokenEntry[]): { entries: TokenEntry[]; problems: string[] } {
  const problems: string[] = [];
  const scopeByName = new Map<string, string>();
  const checked = entries.map((entry, index) => {
    const label = `entry ${index} (${JSON.stringify(entry.name)}, ${entry.role})`;
    const scope = JSON.stringify(entry.prefixes ?? null);
    const seen = scopeByName.get(entry.name);
    if (seen !== undefined && seen !== scope) problems.push(`${label}: another entry of this name has other prefixes`);
    scopeByName.set(entry.name, scope);
    if (entry.prefixes === undefined) return entry;
    const prefixes = entry.prefixes.map((prefix, at) => {
      const check = checkLockKey(prefix);
      if (check.ok) return check.key;
      problems.push(`${label}: prefixes[${at}] ${JSON.stringify(prefix)} is not a valid key prefix (${check.problem})`);
      return prefix;
    });
    return { ...entry, prefixes };
  });
  return { entries: checked, problems };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
