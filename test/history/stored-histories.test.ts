/**
 * The checker against the long runs kept in bench/results/torture (30 min under every fault, real
 * servers, no planted bug): each was reported with no violation when it was recorded, and every
 * rule added since must agree. A rule that fires on one of them is wrong (a false positive on a
 * correct build), not the build: these histories cannot change.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { check, renderFinding } from './checker.js';
import { fromJsonLines } from './format.js';
import { UNKNOWN_EFFECT_WITHIN_MILLIS } from './run.js';

const DIR = path.resolve(import.meta.dirname, '../../bench/results/torture');
const STORED = readdirSync(DIR).filter((name) => name.endsWith('.history.jsonl.gz') && !name.includes('planted'));

describe('stored torture histories', () => {
  test('there are some, from every store', () => {
    for (const store of ['embedded', 'postgres', 'etcd']) expect(STORED.some((name) => name.startsWith(`${store}-`))).toBe(true);
  });

  test.each(STORED)('%s: still no violation under every current rule', (name) => {
    const history = fromJsonLines(gunzipSync(readFileSync(path.join(DIR, name))).toString('utf8'));
    const report = check(history, { unknownEffectWithinMillis: UNKNOWN_EFFECT_WITHIN_MILLIS });
    expect(report.stats.grants).toBeGreaterThan(50);
    expect(report.violations.map((v) => renderFinding(v, history.ops))).toEqual([]);
  }, 180_000);
});
