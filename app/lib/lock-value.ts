/**
 * A lock value is text a lock holder chose (≤ 4096 bytes): the console shows it as text, never as
 * markup (React escapes it), and makes invisible characters visible so a value cannot pass for
 * something else on screen — control characters could fake a line break and bidi controls could
 * show characters in another order than they are stored.
 */

import { CONTROL_CHARACTER, INVISIBLE_CHARACTER } from '../../contract/wire-rules';

/** Code points of a value shown in a table cell before it is cut (the full value is one click away). */
export const VALUE_PREVIEW_CODE_POINTS = 80;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
/** The key rule's two classes (contract/wire-rules.ts): controls, and characters that draw nothing or reorder what is drawn. */
function invisible(char: string): boolean {
  return CONTROL_CHARACTER.test(char) || INVISIBLE_CHARACTER.test(char);
}

function escape(char: string): string {
  return NAMED[char] ?? `\\u{${char.codePointAt(0)!.toString(16)}}`;
}

/** The value on one line: every invisible character (line breaks too) written as an escape. */
export function visibleValue(value: string): string {
  return Array.from(value, (char) => (invisible(char) ? escape(char) : char)).join('');
}

/** The value over several lines (its full view): line breaks kept, other invisible characters escaped. */
export function visibleMultilineValue(value: string): string {
  return Array.from(value, (char) => (char !== '\n' && char !== '\r' && invisible(char) ? escape(char) : char)).join('');
}

export interface ValuePreview {
  /** What a table cell shows: the value on one line, cut at `max` code points. */
  text: string;
  /** True when `text` is not the whole value. */
  cut: boolean;
  /** Length of the whole value in code points. */
  codePoints: number;
}

/** The value for a table cell: one line, at most `max` code points (never splitting a surrogate pair). */
export function previewValue(value: string, max = VALUE_PREVIEW_CODE_POINTS): ValuePreview {
  const visible = Array.from(visibleValue(value));
  const codePoints = Array.from(value).length;
  if (visible.length <= max) return { text: visible.join(''), cut: false, codePoints };
  return { text: `${visible.slice(0, max).join('')}…`, cut: true, codePoints };
}
