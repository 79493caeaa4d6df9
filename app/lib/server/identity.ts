/**
 * Learns who a token belongs to by asking the lock server (GET /v1/admin/whoami →
 * {name, role}), so the console can show "signed in as NAME (ROLE)" and disable
 * what the role cannot do. A server without that route still validates the token
 * through A5; the role is then unknown and the server alone decides each action.
 */
import type { Role } from '../api-types';
import { callServer, type UpstreamResult } from './upstream';

export interface TokenIdentity {
  name: string;
  role: Role;
}

export async function resolveIdentity(token: string): Promise<UpstreamResult<TokenIdentity>> {
  const result = await callServer<{ name?: unknown; role?: unknown }>('/v1/admin/whoami', { token });
  if (result.ok) {
    const name = typeof result.body.name === 'string' ? result.body.name : 'unknown';
    const role: Role = result.body.role === 'operator' ? 'operator' : 'viewer';
    return { ok: true, status: 200, body: { name, role } };
  }
  if (result.status !== 404) return result;
  const probe = await callServer<unknown>('/v1/admin/summary', { token });
  if (!probe.ok) return probe;
  return { ok: true, status: 200, body: { name: 'unknown token name', role: 'unknown' } };
}
