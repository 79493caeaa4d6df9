/** Human formatting for times and durations: relative for scanning, absolute for the record. */

export function formatDuration(millis: number): string {
  const negative = millis < 0;
  let s = Math.floor(Math.abs(millis) / 1000);
  const d = Math.floor(s / 86_400);
  s -= d * 86_400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const text = d > 0 ? `${d}d ${h}h` : h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
  return negative ? `-${text}` : text;
}

export function formatRelative(at: number, now: number): string {
  const delta = now - at;
  if (Math.abs(delta) < 1000) return 'just now';
  return delta >= 0 ? `${formatDuration(delta)} ago` : `in ${formatDuration(-delta)}`;
}

/** ISO-like local time with seconds and the UTC offset, unambiguous at 3 a.m. */
export function formatAbsolute(at: number): string {
  const date = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const oh = pad(Math.floor(Math.abs(offset) / 60));
  const om = pad(Math.abs(offset) % 60);
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} ${sign}${oh}:${om}`
  );
}

export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return '—';
  if (perSecond === 0) return '0/s';
  if (perSecond < 0.1) return `${(perSecond * 60).toFixed(1)}/min`;
  return `${perSecond < 10 ? perSecond.toFixed(2) : perSecond.toFixed(0)}/s`;
}

export function formatPercent(ratio: number | null | undefined, digits = 3): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '—';
  return `${(ratio * 100).toFixed(digits)}%`;
}

export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 8)}…` : id;
}
