/**
 * Which admin token the CLI sends, and to whom.
 *
 * Order: `--token-file FILE` / `HOLDFAST_TOKEN_FILE` (the file's first line),
 * then `HOLDFAST_TOKEN`, then the embedded store's local operator token in
 * `$HOLDFAST_DATA_DIR/admin-tokens.json`. A token is never taken from the
 * command line, where `ps` and shell history show it to everyone.
 *
 * The local operator token exists so `npm start` users need no setup; it is
 * sent only to a loopback URL (127.0.0.0/8, ::1, localhost) — the server it was
 * created for. Pointing HOLDFAST_URL elsewhere must not hand it to that host.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';

export type TokenChoice =
  | { token: string; source: 'file' | 'env' | 'local' }
  | { token: undefined; withheldLocalToken?: string };

export interface TokenSources {
  tokenFile?: string;
  envToken?: string;
  dataDir?: string;
  url: string;
}

export async function chooseToken(sources: TokenSources): Promise<TokenChoice> {
  if (sources.tokenFile) return { token: await readTokenFile(sources.tokenFile), source: 'file' };
  if (sources.envToken) return { token: sources.envToken, source: 'env' };
  const localFile = path.resolve(sources.dataDir || './.holdfast', 'admin-tokens.json');
  const local = await localOperatorToken(localFile);
  if (local === undefined) return { token: undefined };
  if (!isLoopbackUrl(sources.url)) return { token: undefined, withheldLocalToken: localFile };
  return { token: local, source: 'local' };
}

export async function readTokenFile(file: string): Promise<string> {
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

async function localOperatorToken(file: string): Promise<string | undefined> {
  try {
    const tokens = JSON.parse(await readFile(file, 'utf8')) as { token: string; role: string }[];
    return tokens.find((t) => t.role === 'operator')?.token ?? tokens[0]?.token;
  } catch {
    return undefined;
  }
}

export function isLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^::ffff:7f[0-9a-f]{2}:/.test(host);
  return false;
}
