/**
 * A lock value is text a lock holder chose (≤ 4096 bytes): the console shows it as text, never as
 * markup (React escapes it), and makes invisible characters visible so a value cannot pass for
 * something else on screen — control characters could fake a line break and bidi controls could
 * show characters in another order than they are stored.
 */

import { visibleValue, visibleMultilineValue } from '../../contract/wire-rules';

export { visibleValue, visibleMultilineValue };

/** Code points of a value shown in a table cell before it is cut (the full value is one click away). */
export const VALUE_PREVIEW_CODE_POINTS = 80;

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
