'use client';
/** A lock's age, coloured by how unusual it is: most critical sections last seconds. */
import { formatAbsolute, formatDuration } from '../lib/format';

/** Held longer than this: worth a look. */
export const AGE_WARN_MILLIS = 60_000;
/** Held longer than this: flagged as long-held (the locks page uses the same threshold). */
export const AGE_BAD_MILLIS = 5 * 60_000;

export function ageTone(ageMillis: number): 'ok' | 'warn' | 'bad' {
  return ageMillis > AGE_BAD_MILLIS ? 'bad' : ageMillis > AGE_WARN_MILLIS ? 'warn' : 'ok';
}

export function LockAge({ grantedAt, now }: { grantedAt: number; now: number }) {
  const age = Math.max(0, now - grantedAt);
  const tone = ageTone(age);
  return (
    <span className={`age age-${tone}`} data-testid="lock-age" data-tone={tone} title={`granted ${formatAbsolute(grantedAt)}`}>
      {formatDuration(age)}
    </span>
  );
}
