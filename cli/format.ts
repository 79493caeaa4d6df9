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

export function relativeTime(at: number, now = Date.now()): string {
  const seconds = Math.round((at - now) / 1000);
  const magnitude = Math.abs(seconds);
  const text = magnitude < 90 ? `${magnitude}s` : magnitude < 5400 ? `${Math.round(magnitude / 60)}m` : `${Math.round(magnitude / 3600)}h`;
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
}
