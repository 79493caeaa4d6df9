/**
 * Text someone else chose (a lock value, v3), made safe to show: every control character and every
 * character that draws nothing or reorders what is drawn (the key rule's two classes) is written as
 * an escape, so a value cannot fake a line break, a terminal escape sequence or a reversed file name.
 * One definition for the console and the CLI.
 */
import { CONTROL_CHARACTER, INVISIBLE_CHARACTER } from './wire-rules.js';

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
