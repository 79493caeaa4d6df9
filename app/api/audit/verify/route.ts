/** The audit chain's verification state, as the server computes it. */
import type { AuditVerification } from '../../../lib/api-types';
import { requireSession } from '../../../lib/server/auth';
import { callServer } from '../../../lib/server/upstream';

export const dynamic = 'force-dynamic';

interface ServerVerification {
  ok: boolean;
  entries: number;
  brokenAt?: string;
  problem?: string;
}

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const result = await callServer<ServerVerification>('/v1/admin/audit/verify', { token: session.token });
  let body: AuditVerification;
  if (result.ok) {
    body = result.body.ok
      ? { state: 'verified', entries: result.body.entries }
      : {
          state: 'broken',
          entries: result.body.entries,
          brokenAt: result.body.brokenAt ?? 'unknown',
          problem: result.body.problem ?? 'the chain does not verify',
        };
  } else if (result.status === 404) {
    body = { state: 'unavailable', message: 'this lock server does not offer chain verification' };
  } else {
    return Response.json(result.body, { status: result.status });
  }
  return Response.json(body, { headers: { 'cache-control': 'no-store' } });
}
