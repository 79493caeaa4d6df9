/** Human durations on the command line (`--older-than 15m`): a number and a unit, or several (`1h30m`). */
import { InvalidArgumentError } from 'commander';

const UNIT_MILLIS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds in `text`, e.g. `500ms`, `30s`, `15m`, `1h30m`, `2d`. A bare number is refused: say the unit. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed) {
    throw new InvalidArgumentError(`"${text}" is not a duration: use a number and a unit (ms, s, m, h, d), e.g. 90s, 15m, 1h30m`);
  }
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MILLIS[p[2]!]!, 0));
}

/** Whole milliseconds for `--ttl MS` / `--wait MS`: a non-negative integer. */
export function parseMillis(text: string): number {
  if (!/^\d{1,10}$/.test(text.trim())) throw new InvalidArgumentError(`"${text}" is not a whole number of milliseconds`);
  return Number(text.trim());
}

