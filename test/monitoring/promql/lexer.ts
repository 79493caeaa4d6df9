/**
 * PromQL tokenizer, enough for the expressions Holdfast generates and writes
 * in runbooks and tests: identifiers (with colons), numbers, durations,
 * strings, operators, `#` comments, and Grafana template variables
 * (`$name`, `${name}`) so dashboard queries parse as written.
 */

export type TokenKind =
  | 'identifier'
  | 'number'
  | 'duration'
  | 'string'
  | 'variable'
  | 'operator'
  | 'punct'
  | 'eof';

export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  /** For strings: the unescaped value. */
  readonly value: string;
  readonly pos: number;
}

export class PromQLSyntaxError extends Error {
  constructor(message: string, readonly pos: number, readonly source: string) {
    super(`${message} at offset ${pos}: …${source.slice(Math.max(0, pos - 20), pos + 20)}…`);
  }
}

const OPERATORS = ['==', '!=', '>=', '<=', '=~', '!~', '>', '<', '=', '+', '-', '*', '/', '%', '^', '@'];
const PUNCT = new Set(['(', ')', '{', '}', '[', ']', ',', ':']);
const DURATION = /^(?:\d+(?:ms|[smhdwy]))+/;
const NUMBER = /^(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/;
// No leading colon: it would swallow the ":" of a subquery step ("[1h:1m]").
const IDENT = /^[a-zA-Z_][a-zA-Z0-9_:]*/;
const VARIABLE = /^\$(?:\{[a-zA-Z0-9_.:]+\}|[a-zA-Z0-9_]+)/;

function readString(source: string, start: number): { text: string; value: string } {
  const quote = source[start]!;
  let value = '';
  let i = start + 1;
  while (i < source.length && source[i] !== quote) {
    if (source[i] === '\\' && quote !== '`') {
      const next = source[i + 1];
      const escapes: Record<string, string> = { n: '\n', t: '\t', '\\': '\\', '"': '"', "'": "'" };
      value += next !== undefined && escapes[next] !== undefined ? escapes[next] : `\\${next ?? ''}`;
      i += 2;
    } else {
      value += source[i];
      i += 1;
    }
  }
  if (i >= source.length) throw new PromQLSyntaxError('unterminated string', start, source);
  return { text: source.slice(start, i + 1), value };
}

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const push = (kind: TokenKind, text: string, value = text) => {
    tokens.push({ kind, text, value, pos: i });
    i += text.length;
  };
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    if (c === '#') {
      while (i < source.length && source[i] !== '\n') i += 1;
      continue;
    }
    const rest = source.slice(i);
    if (c === '"' || c === "'" || c === '`') {
      const { text, value } = readString(source, i);
      push('string', text, value);
      continue;
    }
    const variable = VARIABLE.exec(rest);
    if (variable) {
      push('variable', variable[0]);
      continue;
    }
    const duration = DURATION.exec(rest);
    if (duration && !/[a-zA-Z0-9_.]/.test(rest[duration[0].length] ?? '')) {
      push('duration', duration[0]);
      continue;
    }
    const number = NUMBER.exec(rest);
    if (number) {
      push('number', number[0]);
      continue;
    }
    const ident = IDENT.exec(rest);
    if (ident) {
      push('identifier', ident[0]);
      continue;
    }
    const op = OPERATORS.find((candidate) => rest.startsWith(candidate));
    if (op) {
      push('operator', op);
      continue;
    }
    if (PUNCT.has(c)) {
      push('punct', c);
      continue;
    }
    throw new PromQLSyntaxError(`unexpected character "${c}"`, i, source);
  }
  tokens.push({ kind: 'eof', text: '', value: '', pos: source.length });
  return tokens;
}
