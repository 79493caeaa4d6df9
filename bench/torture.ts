/**
 * `npm run torture -- --store S --minutes M --seed N [--instances K] [--clients C] [--keys K] [--planted BUG]
 *   [--faults kind,kind] [--gap MIN,MAX]`
 * `npm run torture -- --check FILE.history.jsonl[.gz]`: checks a kept history again (with this checker),
 * writes `FILE.recheck.{report.txt,html}` beside it.
 *
 * A long history run (test/history/): the workload and the nemesis for M minutes against
 * K server instances on store S (embedded: 1 instance; postgres: its own cluster, restarted
 * by the nemesis; etcd: three members, the leader killed or partitioned by the nemesis), then the
 * checker. `--faults` narrows the fault kinds (default: all the cluster supports); `--gap` sets the
 * workload steps between faults (default 15,45).
 * Writes `bench/results/torture/<store>-seed<N>-<M>min.{report.txt,html,history.jsonl}` and
 * prints the figures: operations, faults by kind, unknown outcomes, violations. Exits 1 on
 * a violation, 0 otherwise (an indeterminate verdict is printed, not failed).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { check, renderReport } from '../test/history/checker.js';
import { fromJsonLines } from '../test/history/format.js';
import { runHistory, UNKNOWN_EFFECT_WITHIN_MILLIS, writeArtifacts } from '../test/history/run.js';
import { renderTimeline } from '../test/history/timeline.js';
import { PLANTED_BUGS, type PlantedBug } from '../test/history/support/planted-bugs.js';
import type { StoreName } from '../test/support/server.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'embedded' },
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    instances: { type: 'string' },
    clients: { type: 'string', default: '5' },
    keys: { type: 'string', default: '3' },
    planted: { type: 'string' },
    faults: { type: 'string' },
    gap: { type: 'string' },
    check: { type: 'string' },
  },
});

if (values.check) {
  const raw = readFileSync(values.check);
  const history = fromJsonLines((values.check.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'));
  const options = { unknownEffectWithinMillis: UNKNOWN_EFFECT_WITHIN_MILLIS };
  const report = check(history, options);
  const base = `${values.check.replace(/\.history\.jsonl(\.gz)?$/, '')}.recheck`;
  writeFileSync(`${base}.report.txt`, `${renderReport(report, history.ops, 10)}\n`);
  writeFileSync(`${base}.html`, renderTimeline(history, report, options));
  console.log(`${renderReport(report, history.ops, 3)}\nwritten: ${base}.report.txt ${base}.html`);
  process.exit(report.violations.length > 0 ? 1 : 0);
}

const store = values.store as StoreName;
if (!['embedded', 'postgres', 'etcd'].includes(store)) throw new Error(`--store must be embedded, postgres or etcd, not ${store}`);
const planted = values.planted as PlantedBug | undefined;
if (planted !== undefined && !PLANTED_BUGS.includes(planted)) throw new Error(`--planted must be one of ${PLANTED_BUGS.join(', ')}`);
const minutes = Number(values.minutes);
const seed = Number(values.seed);
const instances = Number(values.instances ?? (store === 'embedded' ? 1 : 3));
const gap = values.gap?.split(',').map(Number);
if (gap && (gap.length !== 2 || !gap.every((n) => Number.isInteger(n) && n > 0) || gap[0]! >= gap[1]!)) throw new Error('--gap must be MIN,MAX steps (integers, MIN < MAX)');

const result = await runHistory({
  store,
  instances,
  ...(store === 'postgres' ? { ownPostgres: true } : {}),
  ...(store === 'etcd' ? { etcdMembers: 3 as const } : {}),
  ...(planted ? { plantedBug: planted } : {}),
  seed,
  // Time is what a torture run is asked for; the step count is left unbounded.
  steps: Number.MAX_SAFE_INTEGER,
  deadlineMillis: minutes * 60_000,
  clients: Number(values.clients),
  keys: Number(values.keys),
  ...(values.faults ? { faults: values.faults.split(',') } : {}),
  ...(gap ? { gapSteps: gap as [number, number] } : {}),
});

const name = `${store}-seed${seed}-${minutes}min${planted ? `-planted-${planted}` : ''}`;
const files = writeArtifacts(path.resolve(import.meta.dirname, 'results/torture'), name, result);
const faults = Object.values(result.faults).reduce((a, b) => a + b, 0);
console.log(renderReport(result.report, result.history.ops, 3));
console.log(
  `\n${result.summary}\nfigures: ops ${result.report.stats.ops}, grants ${result.report.stats.grants}, faults ${faults} ${JSON.stringify(result.faults)}, ` +
    `unknown outcomes ${result.report.stats.unknown}, violations ${result.report.violations.length}, indeterminate ${result.report.indeterminate.length}\n` +
    `written: ${files.join(' ')}`,
);
process.exit(result.report.violations.length > 0 ? 1 : 0);
