/** The CLI's client for the admin and lock-read routes (C3 A1–A6, L7) and the operations routes. */
import type { LockPolicy } from '../contract/policies.js';
import type { AuditEntry, LockInfo, LockOutcome, Page, SessionInfo } from '../contract/records.js';
import { CliError } from './exit-codes.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export type AuditVerification =
  | { ok: true; entries: number; headHash: string }
  | { ok: false; entries: number; brokenAt: string; problem: string };

export interface KillResult {
  sessionId: string;
  outcome: 'KILLED' | 'NOT_FOUND';
  releasedLocks: number;
  auditId: string;
}

export interface PruneResult {
  pruned: number;
  checkpoint: { id: string; hash: string };
  auditId: string;
}

export interface WhoAmI {
  name: string;
  role: string;
  /** A scoped token's key prefixes (issue 26); absent = every key. */
  prefixes?: string[];
}

export interface AuditQuery {
  limit?: string;
  cursor?: string;
  actor?: string;
  action?: string;
  target?: string;
}

/** A7: most contended keys over the server's window. */
export interface ContentionTop {
  windowMillis: number;
  items: { key: string; contended: number; waiters: number; holderSessionId?: string; holderOwner?: string }[];
}

/** The server's page-size ceiling (C3 A1/A2 `limit`): walking every page uses it. */
const LARGEST_PAGE = 1000;

export class AdminApi {
  /** The `holdfast-backend` header of the last answer (every route sets it). */
  lastBackend: string | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  contention(limit?: string) {
    return this.call<ContentionTop>('GET', `/v1/admin/contention${query({ limit })}`);
  }
  /** A1; `sort: 'age'` answers one page of the oldest grants (no cursor). */
  listLocks(q: { prefix?: string; limit?: string; cursor?: string; sort?: 'key' | 'age' }) {
    return this.call<Page<LockInfo>>('GET', `/v1/admin/locks${query(q)}`);
  }
  /** Every held lock (A1, all pages): the CLI filters and sorts what the route cannot. */
  async allLocks(prefix?: string): Promise<LockInfo[]> {
    return this.allPages((cursor) => this.listLocks({ prefix, cursor, limit: String(LARGEST_PAGE) }));
  }
  readLock(key: string) {
    return this.call<LockInfo>('GET', `/v1/locks/${encodeURIComponent(key)}`);
  }
  revoke(key: string, reason: string, expectedFencingToken?: string) {
    return this.call<LockOutcome>('POST', `/v1/admin/locks/${encodeURIComponent(key)}/revoke`, {
      reason,
      ...(expectedFencingToken !== undefined ? { expectedFencingToken } : {}),
    });
  }
  listSessions(q: { limit?: string; cursor?: string }) {
    return this.call<Page<SessionInfo>>('GET', `/v1/admin/sessions${query(q)}`);
  }
  async allSessions(): Promise<SessionInfo[]> {
    return this.allPages((cursor) => this.listSessions({ cursor, limit: String(LARGEST_PAGE) }));
  }
  killSession(sessionId: string, reason: string) {
    return this.call<KillResult>('POST', `/v1/admin/sessions/${encodeURIComponent(sessionId)}/kill`, { reason });
  }
  listAudit(q: AuditQuery) {
    return this.call<Page<AuditEntry>>('GET', `/v1/admin/audit${query({ ...q })}`);
  }
  verifyAudit() {
    return this.call<AuditVerification>('GET', '/v1/admin/audit/verify');
  }
  whoami() {
    return this.call<WhoAmI>('GET', '/v1/admin/whoami');
  }
  /** A8: the lock policies in force. */
  policies() {
    return this.call<{ items: LockPolicy[] }>('GET', '/v1/admin/policies');
  }
  readiness() {
    return this.call<{ status: string; backend?: string }>('GET', '/readyz');
  }
  /** The server's `holdfast_build_info` labels, from its /metrics text. */
  async buildInfo(): Promise<{ version?: string; nodeVersion?: string }> {
    const text = await this.call<string>('GET', '/metrics', undefined, 'text');
    const line = text.split('\n').find((l) => l.startsWith('holdfast_build_info{'));
    const label = (name: string) => line?.match(new RegExp(`[{,]${name}="([^"]*)"`))?.[1];
    return { version: label('version'), nodeVersion: label('node_version') };
  }

  private async allPages<T>(page: (cursor: string | undefined) => Promise<Page<T>>): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const next = await page(cursor);
      items.push(...next.items);
      cursor = next.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return items;
  }

  /** A4x: the audit export's JSON lines, as the server streams them. */
  async exportAudit(): Promise<ReadableStream<Uint8Array>> {
    const response = await this.send('GET', '/v1/admin/audit/export');
    if (!response.ok) await this.refused(response);
    return response.body ?? new Blob([]).stream();
  }
  /** A4p (operator): prunes entries older than `before` (epoch milliseconds) behind a sealed checkpoint. */
  pruneAudit(before: number, reason: string) {
    return this.call<PruneResult>('POST', '/v1/admin/audit/prune', { before, reason });
  }

  private async call<T>(method: string, route: string, body?: unknown, as: 'json' | 'text' = 'json'): Promise<T> {
    const response = await this.send(method, route, body);
    if (!response.ok) await this.refused(response);
    const text = await response.text();
    if (as === 'text') return text as T;
    const parsed = parseJson<T>(text);
    if (parsed === undefined && text !== '') {
      throw new CliError('NOT_HOLDFAST', `${joinUrl(this.baseUrl, route)} did not answer JSON: is HOLDFAST_URL a Holdfast server?`);
    }
    return parsed as T;
  }

  private async refused(response: Response): Promise<never> {
    const text = await response.text();
    const error = parseJson<{ error?: { code: string; message: string } }>(text)?.error;
    throw new ApiError(response.status, error?.code ?? 'UNKNOWN', error?.message ?? text);
  }

  private async send(method: string, route: string, body?: unknown): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(joinUrl(this.baseUrl, route), {
        method,
        headers: {
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (error) {
      throw new CliError(
        'UNREACHABLE',
        `cannot reach the lock server at ${this.baseUrl} (${(error as Error).cause ?? (error as Error).message}); set HOLDFAST_URL`,
      );
    }
    this.lastBackend = response.headers.get('holdfast-backend') ?? this.lastBackend;
    return response;
  }
}

/**
 * `route` appended to the base URL's path, so a server behind a path prefix works:
 * `http://host/holdfast` + `/v1/admin/locks` → `http://host/holdfast/v1/admin/locks`
 * (`new URL(route, base)` would drop `/holdfast`).
 */
export function joinUrl(baseUrl: string, route: string): string {
  const base = new URL(baseUrl);
  const [path, search] = route.split('?', 2) as [string, string | undefined];
  base.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  base.search = search ?? '';
  return base.toString();
}

function parseJson<T>(text: string): T | undefined {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

function query(params: Record<string, string | undefined>): string {
  const entries = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
  return entries.length ? `?${new URLSearchParams(entries).toString()}` : '';
}
