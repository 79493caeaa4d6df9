/**
 * Which admin token the CLI sends, and to whom.
 *
 * Order: `--token-file FILE` / `HOLDFAST_TOKEN_FILE` (the file's first line),
 * then `HOLDFAST_TOKEN`, then the embedded store's local operator token in
 * `$HOLDFAST_DATA_DIR/admin-tokens.json`. A token is never taken from the
 * command line, where `ps` and shell history show it to everyone. Token files
 * others can read are refused, as ssh refuses such a key (lock/secret-files.ts).
 *
 * The local operator token exists so `npm start` users need no setup. It is sent
 * only to a literal loopback address (127.0.0.0/8, ::1 — not a name: `localhost`
 * and `*.localhost` resolve however the resolver says), and only after the server
 * there proved it is the one that wrote the token (lock/local-identity.ts): any
 * local user can listen on a free loopback port, and must not receive it.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { IDENTITY_ROUTE, identityKeyFile, identityProof, newNonce, normalAddress, proofMatches, readIdentityKey } from '../lock/local-identity.js';
import { assertPrivateFile } from '../lock/secret-files.js';
import { joinUrl } from './admin-api.js';

/** Why the local operator token was not sent. */
export interface WithheldLocalToken {
  file: string;
  reason: string;
}

export type TokenChoice =
  | { token: string; source: 'file' | 'env' | 'local' }
  | { token: undefined; withheldLocalToken?: WithheldLocalToken };

export interface TokenSources {
  tokenFile?: string;
  envToken?: string;
  dataDir?: string;
  url: string;
}

/** How long the CLI waits for the server's identity proof. */
const PROOF_TIMEOUT_MILLIS = 5_000;

export async function chooseToken(sources: TokenSources): Promise<TokenChoice> {
  if (sources.tokenFile) return { token: await readTokenFile(sources.tokenFile), source: 'file' };
  if (sources.envToken) return { token: sources.envToken, source: 'env' };
  const dataDir = path.resolve(sources.dataDir || './.holdfast');
  const localFile = path.join(dataDir, 'admin-tokens.json');
  const local = await localOperatorToken(localFile);
  if (local === undefined) return { token: undefined };
  if (!isLoopbackUrl(sources.url)) {
    return {
      token: undefined,
      withheldLocalToken: { file: localFile, reason: 'it is only sent to a literal loopback address (127.0.0.1, ::1)' },
    };
  }
  const refused = await serverIdentityProblem(sources.url, dataDir);
  if (refused !== null) return { token: undefined, withheldLocalToken: { file: localFile, reason: refused } };
  return { token: local, source: 'local' };
}

export async function readTokenFile(file: string): Promise<string> {
  await assertPrivateFile(file, 'the token file');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the token file ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const token = text.split(/\r?\n/, 1)[0]!.trim();
  if (token === '') throw new Error(`the token file ${file} is empty; put the admin token on its first line`);
  return token;
}

/** The local operator token, or undefined when there is none (no file, not JSON, no entries). */
async function localOperatorToken(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  // It exists: others must not be able to read it (the server refuses to start on it, too).
  await assertPrivateFile(file, 'the local operator token file');
  try {
    const tokens = JSON.parse(text) as { token: string; role: string }[];
    return tokens.find((t) => t.role === 'operator')?.token ?? tokens[0]?.token;
  } catch {
    return undefined;
  }
}

/**
 * Null when the server at `url` proves it holds the identity key beside the local token file
 * (lock/local-identity.ts), else why the token is withheld. The question carries no credentials.
 */
export async function serverIdentityProblem(url: string, dataDir: string): Promise<string | null> {
  const keyFile = identityKeyFile(dataDir);
  let key: Buffer;
  try {
    key = await readIdentityKey(keyFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return `there is no server identity key (${keyFile}) to check the server with; restart the embedded server once to create it`;
    }
    throw error;
  }
  const target = new URL(url);
  const address = normalAddress(target.hostname);
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  const nonce = newNonce();
  let answer: unknown;
  try {
    const response = await fetch(joinUrl(url, IDENTITY_ROUTE), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ nonce }),
      redirect: 'error',
      signal: AbortSignal.timeout(PROOF_TIMEOUT_MILLIS),
    });
    answer = response.ok ? ((await response.json().catch(() => null)) as { proof?: unknown } | null)?.proof : undefined;
  } catch {
    return `the server at ${url} did not answer the identity check`;
  }
  if (!proofMatches(identityProof(key, nonce, address, port), answer)) {
    return `the server at ${url} could not prove it is the server of ${dataDir} (another program may be listening on that port)`;
  }
  return null;
}

/** A literal loopback address: 127.0.0.0/8 or ::1 (also IPv4-mapped). Names never count. */
export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return false;
  }
  const address = normalAddress(host);
  if (isIP(address) === 4) return address.split('.')[0] === '127';
  if (isIP(address) === 6) return address === '::1';
  return false;
}
