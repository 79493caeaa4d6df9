/**
 * HOLDFAST_POLICIES_FILE (issue 26): what is accepted, and every refusal names the line of the entry
 * or field at fault; the PolicyBook keeps the last good policies through a broken edit and reports it
 * once. Reloads here are driven by `book.reload()` (what the watch and the poll call), not by waiting.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NO_POLICY } from '../../contract/policies.js';
import { PoliciesFileError, loadPoliciesFile, parsePolicies } from '../../lock/policies-file.js';
import { PolicyBook, type PolicyReload } from '../../lock/policy-book.js';
import { serverPrefix, underPolicy } from '../../app/lib/policy-filter.js';

const GOOD_YAML = `# two teams
- name: payouts
  prefix: payouts/
  maxHoldMillis: 3000
  maxTtlMillis: 60000
  defaultTtlMillis: 30000
  maxWaiters: 5
- name: payouts-eu
  prefix: payouts/eu/
`;

describe('parsePolicies', () => {
  it('reads YAML and the same policies written as JSON alike, in file order', () => {
    const fromYaml = parsePolicies(GOOD_YAML, 'p.yaml');
    const fromJson = parsePolicies(JSON.stringify(fromYaml, null, 2), 'p.json');
    expect(fromYaml).toEqual([
      { name: 'payouts', prefix: 'payouts/', maxHoldMillis: 3000, maxTtlMillis: 60000, defaultTtlMillis: 30000, maxWaiters: 5 },
      { name: 'payouts-eu', prefix: 'payouts/eu/' },
    ]);
    expect(fromJson).toEqual(fromYaml);
    expect(parsePolicies('[]', 'p.json')).toEqual([]);
  });

  it('keeps a prefix in the form keys are stored in (NFC)', () => {
    const [policy] = parsePolicies(`- {name: cafe, prefix: "cafe\u0301/"}`, 'p.yaml');
    expect(policy!.prefix).toBe('caf\u00e9/');
  });

  // Each bad file, the line its refusal must name, and what it must say.
  const BAD: [string, string, number | undefined, RegExp][] = [
    ['an unknown field', `- name: a\n  prefix: a/\n  maxHold: 5\n`, 3, /unknown field "maxHold"/],
    ['a zero maxHoldMillis', `- name: a\n  prefix: a/\n- name: b\n  prefix: b/\n  maxHoldMillis: 0\n`, 5, /policy 2 \("b"\): maxHoldMillis must be positive/],
    ['a fractional maxWaiters', `- name: a\n  prefix: a/\n  maxWaiters: 1.5\n`, 3, /maxWaiters must be a whole number/],
    ['a TTL above the wire range', `- name: a\n  prefix: a/\n  maxTtlMillis: 600001\n`, 3, /maxTtlMillis must be at most 600000/],
    ['a TTL below it', `- name: a\n  prefix: a/\n  defaultTtlMillis: 999\n`, 3, /defaultTtlMillis must be at least 1000/],
    ['a default above the max', `- name: a\n  prefix: a/\n  maxTtlMillis: 5000\n  defaultTtlMillis: 6000\n`, 4, /defaultTtlMillis must not exceed maxTtlMillis/],
    ['a name with a space', `- name: a\n  prefix: a/\n- name: "b c"\n  prefix: b/\n`, 3, /name must be 1–63 characters/],
    ['an over-long name', `- name: ${'n'.repeat(64)}\n  prefix: a/\n`, 1, /name must be 1–63/],
    ['a duplicate name', `- name: a\n  prefix: a/\n- name: a\n  prefix: b/\n`, 3, /the name "a" is already used \(line 1\)/],
    ['a duplicate prefix', `- name: a\n  prefix: a/\n- name: b\n  prefix: a/\n`, 4, /the prefix "a\/" is already policy "a"'s \(line 1\)/],
    ['an empty prefix', `- name: a\n  prefix: ""\n`, 2, /prefix must not be empty/],
    ['a prefix with a control character', `- name: a\n  prefix: "a\\u0007"\n`, 2, /prefix as a key must not contain control characters/],
    ['a missing prefix', `- name: a\n- name: b\n  prefix: b/\n`, 1, /policy 1 \("a"\): prefix/],
    ['an entry that is not a mapping', `- name: a\n  prefix: a/\n- just-a-string\n`, 3, /policy 2: expected a mapping/],
    ['not a list', `name: a\nprefix: a/\n`, 1, /expected a list of policies/],
    ['broken YAML', `- name: a\n  prefix: [a/\n`, 3, /not valid YAML or JSON/],
    ['broken JSON', `[{"name": "a", "prefix": "a/"},\n {"name": "b" "prefix": "b/"}]`, 2, /not valid YAML or JSON/],
    ['a duplicate key', `- name: a\n  prefix: a/\n  prefix: b/\n`, 3, /not valid YAML or JSON/],
    ['an empty file', `\n`, undefined, /is empty/],
  ];
  it.each(BAD)('refuses %s, naming the line', (_what, text, line, problem) => {
    let refusal: unknown;
    try {
      parsePolicies(text, '/etc/holdfast/policies.yaml');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(PoliciesFileError);
    const error = refusal as PoliciesFileError;
    expect(error.line).toBe(line);
    expect(error.message).toMatch(problem);
    expect(error.message.startsWith(`/etc/holdfast/policies.yaml${line === undefined ? '' : `:${line}`}: `)).toBe(true);
  });

  it('the example deploy/policies.yaml is valid', () => {
    const policies = loadPoliciesFile(path.resolve(import.meta.dirname, '../../deploy/policies.yaml'));
    expect(policies.map((p) => p.name)).toEqual(['payouts', 'reports', 'payouts-eu']);
  });
});

describe('PolicyBook', () => {
  const dirs: string[] = [];
  const books: PolicyBook[] = [];
  afterEach(() => {
    for (const book of books.splice(0)) book.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  function setUp(text: string) {
    const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-policies-'));
    dirs.push(dir);
    const file = path.join(dir, 'policies.yaml');
    writeFileSync(file, text);
    const reloads: PolicyReload[] = [];
    // A long poll: these tests drive every reload themselves.
    const book = PolicyBook.open(file, { onReload: (reload) => reloads.push(reload), pollMillis: 3_600_000 });
    books.push(book);
    return { file, dir, book, reloads };
  }

  it('refuses to open a bad file, naming the line', () => {
    expect(() => setUp(`- name: a\n  prefix: a/\n  maxTtlMillis: 5\n`)).toThrow(/policies\.yaml:3: policy 1 \("a"\): maxTtlMillis must be at least 1000/);
  });

  it('takes a good edit (in place or by rename), keeps the last good policies through a broken one, and reports each once', async () => {
    const { file, dir, book, reloads } = setUp(GOOD_YAML);
    expect(book.current().map((p) => p.name)).toEqual(['payouts', 'payouts-eu']);

    writeFileSync(file, `- name: reports\n  prefix: reports/\n  maxHoldMillis: 14400000\n`);
    await book.reload();
    expect(book.current()).toEqual([{ name: 'reports', prefix: 'reports/', maxHoldMillis: 14400000 }]);
    expect(reloads).toEqual([{ outcome: 'loaded', file, policies: book.current() }]);

    writeFileSync(file, `- name: reports\n  prefix: reports/\n  maxHoldMillis: -1\n`);
    await book.reload();
    await book.reload(); // the same broken text again: not reported twice
    expect(book.current()).toEqual([{ name: 'reports', prefix: 'reports/', maxHoldMillis: 14400000 }]);
    expect(reloads).toHaveLength(2);
    expect(reloads[1]).toEqual({ outcome: 'rejected', file, message: `${file}:3: policy 1 ("reports"): maxHoldMillis must be positive` });

    // An editor's save: a new file renamed over the old one.
    const next = path.join(dir, 'policies.yaml.tmp');
    writeFileSync(next, `[{"name": "ledger", "prefix": "ledger/"}]`);
    renameSync(next, file);
    await book.reload();
    expect(book.current()).toEqual([{ name: 'ledger', prefix: 'ledger/' }]);
    expect(reloads.map((r) => r.outcome)).toEqual(['loaded', 'rejected', 'loaded']);
  });

  it('a removed or emptied file is a broken edit: the last good policies stay', async () => {
    const { file, book, reloads } = setUp(GOOD_YAML);
    writeFileSync(file, '');
    await book.reload();
    rmSync(file);
    await book.reload();
    expect(book.current().map((p) => p.name)).toEqual(['payouts', 'payouts-eu']);
    expect(reloads.map((r) => r.outcome)).toEqual(['rejected', 'rejected']);
    expect((reloads[1] as { message: string }).message).toMatch(/cannot read the policies file/);
  });

  it('an unchanged file is not reported', async () => {
    const { book, reloads } = setUp(GOOD_YAML);
    await book.reload();
    await book.reload();
    expect(reloads).toEqual([]);
  });

  it('without a file there are no policies', () => {
    expect(PolicyBook.none().current()).toEqual([]);
  });
});

describe('the console policy filter', () => {
  const policies = parsePolicies(GOOD_YAML, 'p.yaml');
  it('asks the server for the policy prefix (or the longer typed one), and nothing when they exclude each other', () => {
    expect(serverPrefix('', null, policies)).toBe('');
    expect(serverPrefix('pay', 'payouts', policies)).toBe('payouts/');
    expect(serverPrefix('payouts/us/', 'payouts', policies)).toBe('payouts/us/');
    expect(serverPrefix('reports/', 'payouts', policies)).toBeUndefined();
    expect(serverPrefix('x', NO_POLICY, policies)).toBe('x');
  });
  it('keeps only the keys the chosen policy wins by the longest prefix', () => {
    const page = ['payouts/us/1', 'payouts/eu/2', 'other/3'].map((key) => ({ key }));
    expect(underPolicy(page, 'payouts', policies).map((l) => l.key)).toEqual(['payouts/us/1']);
    expect(underPolicy(page, 'payouts-eu', policies).map((l) => l.key)).toEqual(['payouts/eu/2']);
    expect(underPolicy(page, NO_POLICY, policies).map((l) => l.key)).toEqual(['other/3']);
    expect(underPolicy(page, null, policies)).toHaveLength(3);
  });
});
