'use client';
/** A live countdown to a lock's expiry, and its age since the grant. */
import { formatAbsolute, formatDuration, formatRelative } from '../lib/format';

export function TtlCountdown({ expiresAt, now }: { expiresAt?: number; now: number }) {
  if (!expiresAt) return <span className="muted">—</span>;
  const left = expiresAt - now;
  const tone = left <= 0 ? 'ttl-expired' : left < 5_000 ? 'ttl-low' : '';
  return (
    <span className={`ttl ${tone}`} title={`expires ${formatAbsolute(expiresAt)}`} data-testid="ttl">
      {left <= 0 ? 'expiring' : formatDuration(left)}
    </span>
  );
}

export function When({ at, now }: { at?: number; now: number }) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={formatAbsolute(at)}>
      {formatRelative(at, now)}
    </time>
  );
}
