/**
 * Learns who a token belongs to by asking the lock server, so the console can
 * show "signed in as NAME (ROLE)" and disable what the role cannot do.
 */
import type { Role } from '../api-types';
import { callServer, type UpstreamResult } from './upstream';

export interface TokenIdentity {
  name: string;
  role: Role;
}

export async function resolveIdentity(token: string): Promise<UpstreamResult<TokenIdentity>> {
  const result = await callServer<{ name?: unknown; role?: unknown }>('/v1/admin/whoami', { token });
  if (!result.ok) return result;
  const name = typeof result.body.name === 'string' ? result.body.name : 'unknown';
  const role: Role = result.body.role === 'operator' ? 'operator' : 'viewer';
  return { ok: true, status: 200, body: { name, role } };
}
