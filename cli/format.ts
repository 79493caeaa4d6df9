/** Human output for the CLI: aligned tables and relative times. */
import Table from 'cli-table3';

export function formatTable(head: string[], rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  const table = new Table({
    head,
    style: { head: [], border: [], compact: true },
    chars: { top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ' },
  });
  table.push(...rows);
  return table.toString().split('\n').map((line) => line.trimEnd()).join('\n');
}

/** A moment that may be ahead or behind: "in 5s", "2m ago" (an expiry that has passed reads as ago). */
export function relativeTime(at: number, now = Date.now()): string {
  const seconds = Math.round((at - now) / 1000);
  return seconds >= 0 ? `in ${span(seconds)}` : `${span(-seconds)} ago`;
}

/**
 * A moment that has happened (a grant, a heartbeat): always "… ago". The server's clock may run a
 * little ahead of this machine's, and a grant made under a second ago must not read "in 0s".
 */
export function timeAgo(at: number, now = Date.now()): string {
  return `${span(Math.max(0, Math.round((now - at) / 1000)))} ago`;
}

function span(seconds: number): string {
  return seconds < 90 ? `${seconds}s` : seconds < 5400 ? `${Math.round(seconds / 60)}m` : `${Math.round(seconds / 3600)}h`;
}
