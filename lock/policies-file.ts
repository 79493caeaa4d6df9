/**
 * `HOLDFAST_POLICIES_FILE` (SPEC "v3 — teams on one service"): a YAML or JSON list of
 * `{name, prefix, maxHoldMillis?, maxTtlMillis?, defaultTtlMillis?, maxWaiters?}`, read into
 * contract/policies.ts's `LockPolicy` records. Every refusal names the file and the line of the
 * entry (or of its field) that is wrong, so an operator fixes a 200-line file without bisecting it.
 * One parser for both formats: JSON is YAML 1.2, and YAML's parser knows where each node is.
 *
 * The same function reads the file at start (a refusal stops the server), on every change (a refusal
 * keeps the last good policies: lock/policy-book.ts) and in `npm run gen` (the per-policy alerts).
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isScalar, isSeq, type Node, type YAMLMap } from 'yaml';
import { z } from 'zod';
import { NO_POLICY, type LockPolicy } from '../contract/policies.js';
import { LOCK_TTL_MILLIS, checkLockKey } from '../contract/wire-rules.js';

/**
 * A policy's name is a metric label value (`policy`) and a console filter: short, printable, and
 * never the empty name, which is `NO_POLICY` (keys under no policy).
 */
export const POLICY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
/** More policies than this is a per-key policy in disguise, and a label with too many values. */
export const MAX_POLICIES = 200;

const ttl = z
  .number()
  .int('must be a whole number of milliseconds')
  .min(LOCK_TTL_MILLIS.min, `must be at least ${LOCK_TTL_MILLIS.min} (the smallest lock TTL)`)
  .max(LOCK_TTL_MILLIS.max, `must be at most ${LOCK_TTL_MILLIS.max} (the largest lock TTL)`);
const positiveInt = z.number().int('must be a whole number').positive('must be positive').max(Number.MAX_SAFE_INTEGER);

const entrySchema = z
  .strictObject({
    name: z.string().regex(POLICY_NAME_PATTERN, 'must be 1–63 characters of A–Z a–z 0–9 _ . -, starting with a letter or digit'),
    prefix: z.string().min(1, 'must not be empty (a policy for every key is what no policy means)'),
    maxHoldMillis: positiveInt.optional(),
    maxTtlMillis: ttl.optional(),
    defaultTtlMillis: ttl.optional(),
    maxWaiters: positiveInt.optional(),
  })
  .refine((entry) => entry.defaultTtlMillis === undefined || entry.maxTtlMillis === undefined || entry.defaultTtlMillis <= entry.maxTtlMillis, {
    message: 'must not exceed maxTtlMillis',
    path: ['defaultTtlMillis'],
  });

/** A refused policies file: the message names the file and the line. */
export class PoliciesFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    problem: string,
  ) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${problem}`);
    this.name = 'PoliciesFileError';
  }
}

/** Reads and validates the file; throws PoliciesFileError when it cannot be read or is not valid. */
export function loadPoliciesFile(file: string): readonly LockPolicy[] {
  return readPoliciesFile(file).policies;
}

/** The file's text and its policies (the text, so a watcher can tell an edit from a touch). */
export function readPoliciesFile(file: string): { text: string; policies: readonly LockPolicy[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new PoliciesFileError(file, undefined, `cannot read the policies file: ${(error as Error).message}`);
  }
  return { text, policies: parsePolicies(text, file) };
}

/** The policies in `text` (from `file`, for the messages), in file order. */
export function parsePolicies(text: string, file: string): readonly LockPolicy[] {
  // An empty file is what a half-written one looks like: refuse it rather than drop every policy.
  if (text.trim() === '') throw new PoliciesFileError(file, undefined, 'the policies file is empty (write [] for no policies)');
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const lineOf = (node: Node | null | undefined): number | undefined => (node?.range ? lines.linePos(node.range[0]).line : undefined);
  const syntax = doc.errors[0];
  if (syntax) throw new PoliciesFileError(file, lines.linePos(syntax.pos[0]).line, `not valid YAML or JSON: ${syntax.message.split('\n')[0]}`);
  const root = doc.contents;
  if (!isSeq(root)) throw new PoliciesFileError(file, lineOf(root), 'expected a list of policies ([{name, prefix, …}])');
  if (root.items.length > MAX_POLICIES) throw new PoliciesFileError(file, lineOf(root), `more than ${MAX_POLICIES} policies`);

  const values = doc.toJS() as unknown[];
  const policies: LockPolicy[] = [];
  const byName = new Map<string, number | undefined>();
  const byPrefix = new Map<string, { name: string; line: number | undefined }>();
  root.items.forEach((item, index) => {
    const node = item as Node;
    const line = lineOf(node);
    const where = `policy ${index + 1}`;
    if (!isMap(node)) throw new PoliciesFileError(file, line, `${where}: expected a mapping {name, prefix, …}`);
    const parsed = entrySchema.safeParse(values[index]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = typeof issue.path[0] === 'string' ? issue.path[0] : undefined;
      const unknownKey = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
      const fieldLine = lineOfField(node, unknownKey ?? field, lineOf) ?? line;
      const named = typeof node.get('name') === 'string' ? ` ("${String(node.get('name'))}")` : '';
      const what = unknownKey ? `unknown field "${unknownKey}"` : field ? `${field} ${issue.message}` : issue.message;
      throw new PoliciesFileError(file, fieldLine, `${where}${named}: ${what}`);
    }
    const entry = parsed.data;
    const key = checkLockKey(entry.prefix);
    if (!key.ok) throw new PoliciesFileError(file, lineOfField(node, 'prefix', lineOf) ?? line, `${where} ("${entry.name}"): prefix ${key.problem.replace(/^lock key/, 'as a key')}`);
    if (entry.name === NO_POLICY) throw new PoliciesFileError(file, line, `${where}: the empty name means "no policy"`);
    if (byName.has(entry.name)) {
      throw new PoliciesFileError(file, lineOfField(node, 'name', lineOf) ?? line, `${where}: the name "${entry.name}" is already used (line ${byName.get(entry.name)})`);
    }
    const sameScope = byPrefix.get(key.key);
    if (sameScope) {
      throw new PoliciesFileError(
        file,
        lineOfField(node, 'prefix', lineOf) ?? line,
        `${where} ("${entry.name}"): the prefix "${key.key}" is already policy "${sameScope.name}"'s (line ${sameScope.line})`,
      );
    }
    byName.set(entry.name, line);
    byPrefix.set(key.key, { name: entry.name, line });
    policies.push(Object.freeze({ ...stripUndefined(entry), prefix: key.key }));
  });
  return Object.freeze(policies);
}

/** The line of `field`'s key inside a mapping entry, when the entry is a mapping that has it. */
function lineOfField(node: Node, field: string | undefined, lineOf: (node: Node | null | undefined) => number | undefined): number | undefined {
  if (field === undefined || !isMap(node)) return undefined;
  const pair = (node as YAMLMap).items.find((candidate) => isScalar(candidate.key) && candidate.key.value === field);
  return pair ? lineOf(pair.key as Node) : undefined;
}

function stripUndefined<T extends object>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;
}
