/** The CLI's client for the admin and lock-read routes (C3 A1–A6, L7). */
import type { AuditEntry, LockInfo, LockOutcome, Page, SessionInfo } from '../contract/records.js';

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

/** A7: most contended keys over the server's window. */
export interface ContentionTop {
  windowMillis: number;
  items: { key: string; contended: number; waiters: number; holderSessionId?: string; holderOwner?: string }[];
}

export class AdminApi {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  contention(limit?: string) {
    return this.call<ContentionTop>('GET', `/v1/admin/contention${query({ limit })}`);
  }
  listLocks(q: { prefix?: string; limit?: string; cursor?: string; sort?: string }) {
    return this.call<Page<LockInfo>>('GET', `/v1/admin/locks${query(q)}`);
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
  killSession(sessionId: string, reason: string) {
    return this.call<KillResult>('POST', `/v1/admin/sessions/${encodeURIComponent(sessionId)}/kill`, { reason });
  }
  listAudit(q: { limit?: string; cursor?: string; actor?: string; target?: string }) {
    return this.call<Page<AuditEntry>>('GET', `/v1/admin/audit${query(q)}`);
  }
  verifyAudit() {
    return this.call<AuditVerification>('GET', '/v1/admin/audit/verify');
  }

  private async call<T>(method: string, route: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(new URL(route, this.baseUrl), {
        method,
        headers: {
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (error) {
      throw new Error(`cannot reach the lock server at ${this.baseUrl} (${(error as Error).cause ?? (error as Error).message}); set HOLDFAST_URL`);
    }
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!response.ok) {
      const error = (parsed as { error?: { code: string; message: string } } | undefined)?.error;
      throw new ApiError(response.status, error?.code ?? 'UNKNOWN', error?.message ?? text);
    }
    return parsed as T;
  }
}

function query(params: Record<string, string | undefined>): string {
  const entries = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
  return entries.length ? `?${new URLSearchParams(entries).toString()}` : '';
}
