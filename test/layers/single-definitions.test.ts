/**
 * Issue 21: every wire rule is defined once, in contract/ — the fencing-token
 * pattern, the lock-key rule, the request limits and the error table. This
 * reads every source file outside contract/ (the folders the layer rules cover;
 * comments stripped) and fails on any line that writes one of them again: a
 * token or surrogate pattern, a control-character class, a key-byte or TTL/wait
 * limit as a number, a status or retryability beside an error code, a code as an
 * unchecked string in a class, a union or a table. Using a rule is fine
 * (`checkLockKey(key)`, `LOCK_TTL_MILLIS.max`, `case 'LOCK_LOST':` against the
 * typed code) — restating it is not.
 *
 * Each fingerprint also fires on a small sample of the restatement it is for,
 * so one that stopped matching (a typo in its pattern) fails here too.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../contract/error-table.js';
import { KEY_BYTES, LOCK_TTL_MILLIS, SESSION_TTL_MILLIS, WAIT_MILLIS } from '../../contract/wire-rules.js';

const root = path.resolve(import.meta.dirname, '../..');
/** The folders the layer rules cover (test/layers/layer-rules.test.ts), without contract/ itself. */
const SOURCE_FOLDERS = ['client', 'lock', 'exporter', 'app', 'cli', 'bin', 'alerts', 'dashboards', 'scripts', 'demo', 'deploy'];
const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Built output, and examples: user code that picks its own TTLs as any caller may (client/examples/). */
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', '.next', 'examples']);

/** A number as source may write it: `600000` or `600_000`. */
const numberLiteral = (value: number) => {
  const digits = String(value);
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, '_');
  return `\\b(?:${digits}|${grouped})\\b`;
};
const codes = (list: readonly string[]) => list.join('|');
/** A kill's outcome is also called NOT_FOUND (A6): left out where a union or a table of outcomes could say it. */
const CODES_NOT_OUTCOMES = ERROR_CODES.filter((code) => code !== 'NOT_FOUND');

/** The TTL and wait limits (C3 L1, L4, L5), by number. */
const LIMIT_NUMBERS = new Map<number, string[]>();
for (const [constant, value] of [
  ['SESSION_TTL_MILLIS.max', SESSION_TTL_MILLIS.max],
  ['SESSION_TTL_MILLIS.default', SESSION_TTL_MILLIS.default],
  ['LOCK_TTL_MILLIS.max', LOCK_TTL_MILLIS.max],
  ['LOCK_TTL_MILLIS.default', LOCK_TTL_MILLIS.default],
  ['WAIT_MILLIS.max', WAIT_MILLIS.max],
] as const) {
  LIMIT_NUMBERS.set(value, [...(LIMIT_NUMBERS.get(value) ?? []), constant]);
}

interface Fingerprint {
  id: string;
  rule: 'token pattern' | 'key rule' | 'limits' | 'error codes';
  what: string;
  /** Tested against each line (comments stripped). */
  line: RegExp;
  /** When set, the line must match this too (a number is a limit only beside what it bounds). */
  context?: RegExp;
  /** A restatement the fingerprint must catch (checked below). */
  sample: string;
}

const FINGERPRINTS: Fingerprint[] = [
  {
    id: 'token-digits',
    rule: 'token pattern',
    what: 'a decimal int64 pattern ({0,18} digits): use isFencingToken / FENCING_TOKEN_PATTERN',
    line: /\[0-9\]\{0,18\}|\\d\{0,18\}/,
    sample: 'export const DECIMAL_TOKEN = /^(0|[1-9][0-9]{0,18})$/;',
  },
  {
    id: 'token-int64-max',
    rule: 'token pattern',
    what: "int64's maximum: use FENCING_TOKEN_MAX / isFencingToken",
    line: /9223372036854775807/,
    sample: 'const INT64_MAX = 9223372036854775807n;',
  },
  {
    id: 'key-control-class',
    rule: 'key rule',
    what: 'the control-character class: use checkLockKey / CONTROL_CHARACTER',
    line: /\\u0000-\\u001f|\\x00-\\x1f/i,
    sample: 'const CONTROL = /[\\u0000-\\u001f\\u007f-\\u009f]/;',
  },
  {
    id: 'key-lone-surrogate',
    rule: 'key rule',
    what: 'the lone-surrogate check: use checkLockKey',
    line: /\\ud800-\\udbff/i,
    sample: 'const LONE_SURROGATE = /[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])/;',
  },
  {
    id: 'key-normalization',
    rule: 'key rule',
    what: 'key normalisation or the invisible-character set: use checkLockKey',
    line: /normalize\(\s*['"]NFC['"]|Default_Ignorable_Code_Point/,
    sample: "const nfc = key.normalize('NFC');",
  },
  {
    id: 'key-bytes',
    rule: 'limits',
    what: `the key length (${KEY_BYTES.max} bytes) beside a key: use KEY_BYTES`,
    line: new RegExp(numberLiteral(KEY_BYTES.max)),
    context: /key|byte/i,
    sample: 'const MAX_KEY_BYTES = 512;',
  },
  // One fingerprint per number (the lock TTL's default and the longest wait are both 30000).
  ...[...LIMIT_NUMBERS].map(
    ([value, constants]): Fingerprint => ({
      id: `limit-${value}`,
      rule: 'limits',
      what: `${value} beside a TTL or wait: use ${constants.join(' / ')}`,
      line: new RegExp(numberLiteral(value)),
      context: /ttl|wait/i,
      sample: `const maxTtlMillis = ${value};`,
    }),
  ),
  {
    id: 'code-class-field',
    rule: 'error codes',
    what: "a class naming its wire code as a bare string: use ERROR_CODE.<code> (checked against contract's table)",
    line: new RegExp(`\\bcode\\s*=\\s*['"](?:${codes(ERROR_CODES)})['"]`),
    sample: "  readonly code = 'LOCK_LOST' as const;",
  },
  {
    id: 'code-status-or-retryable',
    rule: 'error codes',
    what: "an error class's own status or retryability: contract's ERROR_TABLE has them",
    line: /\breadonly\s+(?:status\s*=\s*\d|retryable\s*=\s*(?:true|false)\b)/,
    sample: '  readonly status = 409;',
  },
  {
    id: 'code-union',
    rule: 'error codes',
    what: 'a union of wire codes: use ErrorCode (contract/error-table.ts)',
    line: new RegExp(`\\|\\s*['"](?:${codes(CODES_NOT_OUTCOMES)})['"]`),
    sample: "  | 'SESSION_NOT_FOUND'",
  },
  {
    id: 'code-table',
    rule: 'error codes',
    what: "a table keyed by wire code (status, meaning, …): add a column to contract's ERROR_TABLE instead",
    line: new RegExp(`^\\s*(?:${codes(CODES_NOT_OUTCOMES)})\\s*:`),
    sample: "  LOCK_CONTENDED: 'held by another session',",
  },
];

/**
 * Restatements still allowed, each one file and one fingerprint with the change that removes it.
 * Empty: every restatement fails. An entry that no longer matches fails too (delete it).
 */
const TEMPORARY_ALLOWANCE: { file: string; id: string; fix: string }[] = [
];

function sourceFiles(folder: string): string[] {
  const out: string[] = [];
  const walk = (relative: string) => {
    let entries;
    try {
      entries = readdirSync(path.join(root, relative), { withFileTypes: true });
    } catch {
      return; // a folder this checkout does not have
    }
    for (const entry of entries) {
      const child = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) walk(child);
      } else if (SOURCE_FILE.test(entry.name)) {
        out.push(child);
      }
    }
  };
  walk(folder);
  return out;
}

/** Source without comments (`//` only where it opens one, not inside `http://`), line numbers kept. */
function withoutComments(text: string): string[] {
  const blockless = text.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '));
  return blockless.split('\n').map((line) => line.replace(/(^|[\s;,)}])\/\/.*$/, '$1'));
}

interface Hit {
  file: string;
  line: number;
  id: string;
  rule: Fingerprint['rule'];
  what: string;
  text: string;
}

function restatements(files: string[]): Hit[] {
  const found: Hit[] = [];
  for (const file of files) {
    const lines = withoutComments(readFileSync(path.join(root, file), 'utf8'));
    lines.forEach((text, index) => {
      for (const fingerprint of FINGERPRINTS) {
        if (fingerprint.line.test(text) && (!fingerprint.context || fingerprint.context.test(text))) {
          found.push({ file, line: index + 1, id: fingerprint.id, rule: fingerprint.rule, what: fingerprint.what, text: text.trim() });
        }
      }
    });
  }
  return found;
}

const files = SOURCE_FOLDERS.flatMap(sourceFiles);
const found = restatements(files);
const allowed = (hit: Hit) => TEMPORARY_ALLOWANCE.some((entry) => entry.file === hit.file && entry.id === hit.id);

describe('one definition of each wire rule, in contract/ (issue 21)', () => {
  it('reads the source tree (so a moved folder cannot make this pass by reading nothing)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('lock/http/validation.ts');
    expect(files).toContain('client/keys.ts');
  });

  it.each(['token pattern', 'key rule', 'limits', 'error codes'])('no file outside contract/ restates the %s', (rule) => {
    const offending = found
      .filter((hit) => hit.rule === rule && !allowed(hit))
      .map((hit) => `${hit.file}:${hit.line} ${hit.what}\n    ${hit.text}`);
    expect(offending).toEqual([]);
  });

  it.each(TEMPORARY_ALLOWANCE)('the allowance for $file ($id) still matches (else delete it)', (entry) => {
    expect(found.some((hit) => hit.file === entry.file && hit.id === entry.id)).toBe(true);
  });

  it.each(FINGERPRINTS)('the $id fingerprint catches its sample', (fingerprint) => {
    const [line] = withoutComments(fingerprint.sample);
    expect(fingerprint.line.test(line!) && (!fingerprint.context || fingerprint.context.test(line!))).toBe(true);
  });

  it('uses of a rule are not restatements', () => {
    const uses = [
      "if (answer.code === 'LOCK_LOST') return;",
      "case 'CONTENTION_EXCEEDED':",
      'readonly code = ERROR_CODE.LOCK_LOST;',
      'ttlMillis: Type.Integer({ minimum: LOCK_TTL_MILLIS.min, maximum: LOCK_TTL_MILLIS.max }),',
      "outcome: 'KILLED' | 'NOT_FOUND';",
      // A URL in code is not a comment: the line is kept whole.
      "const url = 'http://127.0.0.1:7070'; const wait = 30000;",
    ];
    const hits = uses.flatMap((use) =>
      FINGERPRINTS.filter((f) => {
        const [line] = withoutComments(use);
        return f.line.test(line!) && (!f.context || f.context.test(line!));
      }).map((f) => `${f.id}: ${use}`),
    );
    // The last one is a restatement (30000 beside a wait) and must be the only hit.
    expect(hits).toEqual([`limit-${WAIT_MILLIS.max}: const url = 'http://127.0.0.1:7070'; const wait = 30000;`]);
  });
});
