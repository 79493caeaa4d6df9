/**
 * The history checker: pure functions of a history (format.ts), no Holdfast
 * imports. `check` runs every rule and gives a verdict:
 * - `invalid`: at least one violation, each certain whatever the unknown outcomes were;
 * - `indeterminate`: no violation, but some item is safe only if an unanswered
 *   operation took effect, and nothing else in the history confirms that it did;
 * - `valid`: every rule decided, nothing found.
 * The rules are documented in docs/history.md; each lives in checker/.
 */
import type { History, HistoryOp } from './format.js';
import { checkFence } from './checker/fence.js';
import { checkHolders } from './checker/holders.js';
import type { Finding } from './checker/findings.js';
import { checkLost } from './checker/lost.js';
import { buildModel, DEFAULT_OPTIONS, type CheckOptions } from './checker/model.js';
import { checkMutex, ms } from './checker/mutex.js';
import { checkSupersededReleases } from './checker/superseded.js';
import { checkTokenOrder, checkTokenReuse } from './checker/tokens.js';

export type { Finding, RuleName } from './checker/findings.js';
export type { CheckOptions } from './checker/model.js';

export interface CheckReport {
  verdict: 'valid' | 'invalid' | 'indeterminate';
  violations: Finding[];
  indeterminate: Finding[];
  stats: {
    ops: number;
    grants: number;
    /** Grants by kind (SPEC v3 C4 names): `mutex` (exclusive, limit 1), `semaphore` (exclusive, limit > 1), `shared`. */
    grantsByKind: Record<'mutex' | 'semaphore' | 'shared', number>;
    unknown: number;
    byFunction: Record<string, number>;
    byOutcome: Record<string, number>;
  };
}

export function check(history: History | HistoryOp[], options: Partial<CheckOptions> = {}): CheckReport {
  const ops = Array.isArray(history) ? history : history.ops;
  const model = buildModel(ops, { ...DEFAULT_OPTIONS, ...options });
  const findings = [...checkMutex(model), ...checkHolders(model), ...checkTokenOrder(model), ...checkTokenReuse(model), ...checkFence(model), ...checkLost(model), ...checkSupersededReleases(model)];
  const violations = findings.filter((f) => f.verdict === 'violation').sort((a, b) => a.window[0] - b.window[0]);
  const indeterminate = findings.filter((f) => f.verdict === 'indeterminate').sort((a, b) => a.window[0] - b.window[0]);
  const count = (f: (op: HistoryOp) => string) => {
    const out: Record<string, number> = {};
    for (const op of ops) out[f(op)] = (out[f(op)] ?? 0) + 1;
    return out;
  };
  const grantsByKind = { mutex: 0, semaphore: 0, shared: 0 };
  for (const g of model.grants.values()) grantsByKind[g.mode === 'shared' ? 'shared' : g.mutex ? 'mutex' : 'semaphore'] += 1;
  return {
    verdict: violations.length > 0 ? 'invalid' : indeterminate.length > 0 ? 'indeterminate' : 'valid',
    violations,
    indeterminate,
    stats: {
      ops: ops.length,
      grants: model.grants.size,
      grantsByKind,
      unknown: ops.filter((op) => op.outcome === 'unknown').length,
      byFunction: count((op) => op.f),
      byOutcome: count((op) => op.outcome),
    },
  };
}

/** One operation as a line of a counterexample. */
export function describeOp(op: HistoryOp): string {
  const args = Object.entries(op.args).map(([k, v]) => `${k}=${v}`).join(' ');
  const result = op.result ? ` → ${Object.entries(op.result).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
  const error = op.error ? ` → ${[op.error.status, op.error.code, op.error.message].filter((x) => x !== undefined).join(' ')}` : '';
  const who = [op.process, op.sessionId ? `session ${op.sessionId}` : '', op.endpoint ? `via ${op.endpoint}` : ''].filter(Boolean).join(', ');
  return `#${op.index} [${ms(op.invokeAt)} → ${ms(op.completeAt)}] ${op.f}${op.key !== undefined ? ` ${JSON.stringify(op.key)}` : ''}${args ? ` (${args})` : ''} ${op.outcome.toUpperCase()}${result}${error} — ${who}`;
}

/** The minimal counterexample of a finding: what is wrong, the operations involved with times, and why each bound holds. */
export function renderFinding(finding: Finding, ops: readonly HistoryOp[]): string {
  const byIndex = new Map(ops.map((op) => [op.index, op]));
  return [
    `${finding.verdict.toUpperCase()} ${finding.rule}: ${finding.message}`,
    ...finding.ops.map((i) => byIndex.get(i)).filter((op): op is HistoryOp => op !== undefined).map((op) => `  ${describeOp(op)}`),
    ...finding.reasons.map((r) => `  ${r}`),
  ].join('\n');
}

/** The report as text: verdict, figures, then each violation (and a few indeterminate items) in full. */
export function renderReport(report: CheckReport, ops: readonly HistoryOp[], limit = 5): string {
  const lines = [
    `verdict: ${report.verdict.toUpperCase()} — ${report.violations.length} violation(s), ${report.indeterminate.length} indeterminate item(s)`,
    `ops ${report.stats.ops} (${Object.entries(report.stats.byFunction).map(([k, v]) => `${k} ${v}`).join(', ')}); ` +
      `outcomes ${Object.entries(report.stats.byOutcome).map(([k, v]) => `${k} ${v}`).join(', ')}; grants ${report.stats.grants}` +
      (report.stats.grantsByKind.semaphore + report.stats.grantsByKind.shared > 0
        ? ` (${Object.entries(report.stats.grantsByKind).map(([k, v]) => `${k} ${v}`).join(', ')})`
        : ''),
  ];
  for (const f of report.violations.slice(0, limit)) lines.push('', renderFinding(f, ops));
  if (report.violations.length > limit) lines.push('', `… and ${report.violations.length - limit} more violation(s)`);
  for (const f of report.indeterminate.slice(0, limit)) lines.push('', renderFinding(f, ops));
  if (report.indeterminate.length > limit) lines.push('', `… and ${report.indeterminate.length - limit} more indeterminate item(s)`);
  return lines.join('\n');
}
