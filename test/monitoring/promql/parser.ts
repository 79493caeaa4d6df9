/**
 * Recursive-descent PromQL parser producing a small AST. Operator precedence
 * and modifiers (bool, on/ignoring, group_left/group_right, by/without before
 * or after the aggregation's arguments, offset, @, subqueries) follow the
 * Prometheus grammar.
 */
import { PromQLSyntaxError, tokenize, type Token } from './lexer.js';

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface Matcher {
  readonly label: string;
  readonly op: MatchOp;
  readonly value: string;
}

export type Node =
  | { kind: 'number'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'selector'; name?: string; matchers: Matcher[]; range?: string; offset?: string }
  | { kind: 'subquery'; expr: Node; range: string; step?: string }
  | { kind: 'call'; func: string; args: Node[] }
  | { kind: 'aggregation'; op: string; without: boolean; grouping: string[] | null; param?: Node; expr: Node }
  | { kind: 'unary'; op: '-' | '+'; expr: Node }
  | { kind: 'paren'; expr: Node }
  | {
      kind: 'binary';
      op: string;
      lhs: Node;
      rhs: Node;
      bool: boolean;
      matching?: { on: boolean; labels: string[]; group?: 'left' | 'right'; include: string[] };
    };

export const AGGREGATIONS = new Set([
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values',
  'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio',
]);
const PARAM_AGGREGATIONS = new Set(['count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);

/** Binary operators by precedence, lowest first. */
const PRECEDENCE: readonly (readonly string[])[] = [
  ['or'],
  ['and', 'unless'],
  ['==', '!=', '<=', '<', '>=', '>'],
  ['+', '-'],
  ['*', '/', '%', 'atan2'],
  ['^'],
];
const COMPARISONS = new Set(['==', '!=', '<=', '<', '>=', '>']);
export const SET_OPERATORS = new Set(['and', 'or', 'unless']);

class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[], private readonly source: string) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!;
  }
  private next(): Token {
    const token = this.peek();
    this.i += 1;
    return token;
  }
  private fail(message: string, token = this.peek()): never {
    throw new PromQLSyntaxError(message, token.pos, this.source);
  }
  private isPunct(text: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === 'punct' && t.text === text;
  }
  private expectPunct(text: string): void {
    if (!this.isPunct(text)) this.fail(`expected "${text}", found "${this.peek().text}"`);
    this.i += 1;
  }
  private isWord(word: string): boolean {
    const t = this.peek();
    return t.kind === 'identifier' && t.text.toLowerCase() === word;
  }

  parseRoot(): Node {
    const node = this.parseBinary(0);
    if (this.peek().kind !== 'eof') this.fail(`unexpected "${this.peek().text}"`);
    return node;
  }

  /** The operator at the cursor if it belongs to precedence level `level`. */
  private operatorAt(level: number): string | undefined {
    const t = this.peek();
    const text = t.kind === 'identifier' ? t.text.toLowerCase() : t.kind === 'operator' ? t.text : undefined;
    return text !== undefined && PRECEDENCE[level]!.includes(text) ? text : undefined;
  }

  private parseBinary(level: number): Node {
    if (level >= PRECEDENCE.length) return this.parseUnary();
    let lhs = this.parseBinary(level + 1);
    for (;;) {
      const op = this.operatorAt(level);
      if (!op) return lhs;
      this.next();
      const bool = this.isWord('bool');
      if (bool) {
        if (!COMPARISONS.has(op)) this.fail('bool is only allowed on comparisons');
        this.next();
      }
      const matching = this.parseVectorMatching();
      // ^ is right-associative; everything else is left-associative.
      const rhs = op === '^' ? this.parseBinary(level) : this.parseBinary(level + 1);
      lhs = { kind: 'binary', op, lhs, rhs, bool, ...(matching ? { matching } : {}) };
      if (op === '^') return lhs;
    }
  }

  private parseVectorMatching(): Extract<Node, { kind: 'binary' }>['matching'] {
    if (!this.isWord('on') && !this.isWord('ignoring')) return undefined;
    const on = this.next().text.toLowerCase() === 'on';
    const labels = this.parseLabelList();
    let group: 'left' | 'right' | undefined;
    let include: string[] = [];
    if (this.isWord('group_left') || this.isWord('group_right')) {
      group = this.next().text.toLowerCase() === 'group_left' ? 'left' : 'right';
      if (this.isPunct('(')) include = this.parseLabelList();
    }
    return { on, labels, ...(group ? { group } : {}), include };
  }

  private parseLabelList(): string[] {
    this.expectPunct('(');
    const labels: string[] = [];
    while (!this.isPunct(')')) {
      const t = this.next();
      if (t.kind !== 'identifier') this.fail(`expected a label name, found "${t.text}"`, t);
      labels.push(t.text);
      if (!this.isPunct(')')) this.expectPunct(',');
    }
    this.expectPunct(')');
    return labels;
  }

  private parseUnary(): Node {
    const t = this.peek();
    if (t.kind === 'operator' && (t.text === '-' || t.text === '+')) {
      this.next();
      // Unary minus binds tighter than * but looser than ^ (as in Prometheus).
      return { kind: 'unary', op: t.text, expr: this.parseBinary(PRECEDENCE.length - 1) };
    }
    return this.parsePostfix(this.parsePrimary());
  }

  private parseDurationOrVariable(): string {
    const t = this.next();
    if (t.kind !== 'duration' && t.kind !== 'variable') this.fail(`expected a duration, found "${t.text}"`, t);
    return t.text;
  }

  private parsePostfix(node: Node): Node {
    let current = node;
    for (;;) {
      if (this.isPunct('[')) {
        this.next();
        const range = this.parseDurationOrVariable();
        if (this.isPunct(':')) {
          this.next();
          const step = this.isPunct(']') ? undefined : this.parseDurationOrVariable();
          this.expectPunct(']');
          current = { kind: 'subquery', expr: current, range, ...(step ? { step } : {}) };
          continue;
        }
        this.expectPunct(']');
        if (current.kind !== 'selector' || current.range) this.fail('a range needs a plain vector selector');
        current = { ...current, range };
        continue;
      }
      if (this.isWord('offset')) {
        this.next();
        const negative = this.peek().kind === 'operator' && this.peek().text === '-';
        if (negative) this.next();
        const offset = `${negative ? '-' : ''}${this.parseDurationOrVariable()}`;
        if (current.kind === 'selector') current = { ...current, offset };
        continue;
      }
      if (this.peek().kind === 'operator' && this.peek().text === '@') {
        this.next();
        const t = this.next();
        if (t.kind === 'identifier') {
          this.expectPunct('(');
          this.expectPunct(')');
        } else if (t.kind !== 'number') this.fail('expected a timestamp after @', t);
        continue;
      }
      return current;
    }
  }

  private parsePrimary(): Node {
    const t = this.peek();
    if (t.kind === 'punct' && t.text === '(') {
      this.next();
      const expr = this.parseBinary(0);
      this.expectPunct(')');
      return { kind: 'paren', expr };
    }
    if (t.kind === 'number') {
      this.next();
      return { kind: 'number', value: Number(t.text) };
    }
    if (t.kind === 'string') {
      this.next();
      return { kind: 'string', value: t.value };
    }
    if (t.kind === 'punct' && t.text === '{') return this.parseSelector(undefined);
    if (t.kind === 'identifier') {
      const word = t.text;
      const lower = word.toLowerCase();
      if (lower === 'inf' || lower === 'nan') {
        this.next();
        return { kind: 'number', value: lower === 'inf' ? Infinity : NaN };
      }
      if (AGGREGATIONS.has(lower) && (this.isPunct('(', 1) || ['by', 'without'].includes(this.peek(1).text.toLowerCase()))) {
        return this.parseAggregation();
      }
      if (this.isPunct('(', 1)) return this.parseCall();
      this.next();
      return this.parseSelector(word);
    }
    this.fail(`unexpected "${t.text || 'end of expression'}"`);
  }

  private parseCall(): Node {
    const func = this.next().text;
    this.expectPunct('(');
    const args: Node[] = [];
    while (!this.isPunct(')')) {
      args.push(this.parseBinary(0));
      if (!this.isPunct(')')) this.expectPunct(',');
    }
    this.expectPunct(')');
    return { kind: 'call', func, args };
  }

  private parseGrouping(): { without: boolean; grouping: string[] } | undefined {
    if (!this.isWord('by') && !this.isWord('without')) return undefined;
    const without = this.next().text.toLowerCase() === 'without';
    return { without, grouping: this.parseLabelList() };
  }

  private parseAggregation(): Node {
    const op = this.next().text.toLowerCase();
    let modifier = this.parseGrouping();
    this.expectPunct('(');
    const args: Node[] = [];
    while (!this.isPunct(')')) {
      args.push(this.parseBinary(0));
      if (!this.isPunct(')')) this.expectPunct(',');
    }
    this.expectPunct(')');
    const after = this.parseGrouping();
    if (after) {
      if (modifier) this.fail('by/without given twice');
      modifier = after;
    }
    const wantArgs = PARAM_AGGREGATIONS.has(op) ? 2 : 1;
    if (args.length !== wantArgs) this.fail(`${op} takes ${wantArgs} argument(s), got ${args.length}`);
    const expr = args[args.length - 1]!;
    return {
      kind: 'aggregation',
      op,
      without: modifier?.without ?? false,
      grouping: modifier ? modifier.grouping : null,
      ...(wantArgs === 2 ? { param: args[0]! } : {}),
      expr,
    };
  }

  private parseSelector(name: string | undefined): Node {
    const matchers: Matcher[] = [];
    if (this.isPunct('{')) {
      this.next();
      while (!this.isPunct('}')) {
        const label = this.next();
        if (label.kind !== 'identifier') this.fail(`expected a label name, found "${label.text}"`, label);
        const op = this.next();
        if (op.kind !== 'operator' || !['=', '!=', '=~', '!~'].includes(op.text)) this.fail(`expected a matcher operator`, op);
        const value = this.next();
        if (value.kind !== 'string') this.fail('expected a quoted label value', value);
        matchers.push({ label: label.text, op: op.text as MatchOp, value: value.value });
        if (!this.isPunct('}')) this.expectPunct(',');
      }
      this.expectPunct('}');
    }
    if (name === undefined && !matchers.some((m) => m.label === '__name__')) this.fail('a selector needs a metric name');
    return { kind: 'selector', ...(name !== undefined ? { name } : {}), matchers };
  }
}

export function parse(source: string): Node {
  return new Parser(tokenize(source), source).parseRoot();
}

/** Every node of the tree, depth first. */
export function* walk(node: Node): Generator<Node> {
  yield node;
  switch (node.kind) {
    case 'subquery':
    case 'unary':
    case 'paren':
      yield* walk(node.expr);
      break;
    case 'aggregation':
      if (node.param) yield* walk(node.param);
      yield* walk(node.expr);
      break;
    case 'call':
      for (const arg of node.args) yield* walk(arg);
      break;
    case 'binary':
      yield* walk(node.lhs);
      yield* walk(node.rhs);
      break;
    default:
      break;
  }
}
