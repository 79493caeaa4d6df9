/**
 * A lock value is text a lock holder chose (≤ 4096 bytes): the console shows it as text, never as
 * markup (React escapes it), and makes invisible characters visible so a value cannot pass for
 * something else on screen — control characters could fake a line break and bidi controls could
 * show characters in another order than they are stored.
 */

/** Code points of a value shown in a table cell before it is cut (the full value is one click away). */
export const VALUE_PREVIEW_CODE_POINTS = 80;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
// C0 and C1 controls, DEL, and the bidi marks, embeddings, overrides and isolates.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
const INVISIBLE_BUT_LINE_BREAKS = /[\u0000-\u0009\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

function escape(char: string): string {
  return NAMED[char] ?? `\\u{${char.codePointAt(0)!.toString(16)}}`;
}

/** The value on one line: every invisible character (line breaks too) written as an escape. */
export function visibleValue(value: string): string {
  return value.replace(INVISIBLE, escape);
}

/** The value over several lines (its full view): line breaks kept, other invisible characters escaped. */
export function visibleMultilineValue(value: string): string {
  return value.replace(INVISIBLE_BUT_LINE_BREAKS, escape);
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
