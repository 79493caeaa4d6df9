/**
 * The history as one self-contained HTML page (inline SVG, no scripts, no
 * external assets): an overview of the whole run (holds per key, faults), and
 * a close-up of the first violation (or the first indeterminate item, or the
 * run's start when there is neither) with every operation as a bar from invoke
 * to complete, the window of the finding shaded and its operations outlined.
 */
import type { CheckOptions, CheckReport, Finding } from './checker.js';
import { describeOp, renderFinding } from './checker.js';
import { buildModel, DEFAULT_OPTIONS, heldInterval, type GrantFacts } from './checker/model.js';
import type { History, HistoryOp } from './format.js';

const WIDTH = 1800;
const LABEL = 170;
const LANE = 18;

const COLORS: Record<string, string> = {
  acquire: '#2b7bb9',
  renew: '#7fb3d5',
  release: '#1e8449',
  heartbeat: '#bbbbbb',
  open: '#8e44ad',
  close: '#6c3483',
  read: '#f0b27a',
  write: '#117864',
  revoke: '#c0392b',
  kill: '#922b21',
  fault: '#e74c3c',
  watch: '#999999',
};

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** `options`: the ones the report was checked with, so the holds drawn are the ones it judged. */
export function renderTimeline(history: History, report: CheckReport, options: Partial<CheckOptions> = {}): string {
  const ops = history.ops;
  const focus: Finding | undefined = report.violations[0] ?? report.indeterminate[0];
  const end = Math.max(1, ...ops.map((op) => (Number.isFinite(op.completeAt) ? op.completeAt : op.invokeAt)));
  const model = buildModel(ops, { ...DEFAULT_OPTIONS, ...options });
  const overview = svgFor(history, model.grants, [0, end], undefined, false);
  let window: [number, number] = [0, Math.min(end, 5_000)];
  if (focus) {
    const involved = ops.filter((op) => focus.ops.includes(op.index));
    const lo = Math.min(focus.window[0], ...involved.map((op) => op.invokeAt));
    const hi = Math.max(Number.isFinite(focus.window[1]) ? focus.window[1] : lo, ...involved.map((op) => op.completeAt));
    const pad = Math.max(300, (hi - lo) * 0.25);
    window = [Math.max(0, lo - pad), hi + pad];
  }
  const closeUp = svgFor(history, model.grants, window, focus, true);
  const title = `Holdfast history — ${history.header.store ?? ''} seed ${history.header.seed ?? '-'}${history.header.plantedBug ? ` (planted bug: ${history.header.plantedBug})` : ''}`;
  const text = focus ? renderFinding(focus, ops) : 'No violation and nothing indeterminate.';
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font:13px system-ui,sans-serif;margin:16px}pre{background:#f6f6f6;padding:8px;overflow-x:auto}
.v{color:#b03a2e}.ok{color:#1e8449}.box{overflow-x:auto;border:1px solid #ddd;margin:8px 0}</style></head>
<body><h1>${esc(title)}</h1>
<p class="${report.verdict === 'invalid' ? 'v' : 'ok'}"><b>verdict: ${report.verdict.toUpperCase()}</b> — ${report.violations.length} violation(s), ${report.indeterminate.length} indeterminate;
${report.stats.ops} ops, ${report.stats.grants} grants, ${report.stats.unknown} unknown outcomes.</p>
<h2>${focus ? `${esc(focus.verdict)}: ${esc(focus.rule)}` : 'Run start'} — close-up [${window[0].toFixed(0)}, ${window[1].toFixed(0)}] ms</h2>
<pre>${esc(text)}</pre>
<div class="box">${closeUp}</div>
<h2>Whole run</h2>
<p>Key lanes: when some grant of the key was certainly held (holds less than a pixel apart drawn as one). Red band: the finding's window. Nemesis lane: faults. In the close-up, the pale part of a hold is what depends on unanswered operations.</p>
<div class="box">${overview}</div>
<p>Legend: ${Object.entries(COLORS).map(([f, c]) => `<span style="color:${c}">■</span> ${f}`).join(' &nbsp; ')}; dashed outline = unknown outcome, grey fill = refused.</p>
</body></html>
`;
}

function svgFor(history: History, grants: Map<string, GrantFacts>, window: [number, number], focus: Finding | undefined, detailed: boolean): string {
  const [t0, t1] = window;
  const span = Math.max(1, t1 - t0);
  const x = (t: number) => LABEL + ((Math.min(Math.max(t, t0), t1) - t0) / span) * (WIDTH - LABEL - 10);
  const visible = (a: number, b: number) => b >= t0 && a <= t1;
  const keys = [...new Set([...grants.values()].map((g) => g.key))].sort();
  const processes = detailed
    ? [...new Set(history.ops.filter((op) => visible(op.invokeAt, op.completeAt)).map((op) => op.process))].sort()
    : ['nemesis'];
  // Close-up: holds of one key that overlap (a violation, or a hold and its pale tail) get rows of their own.
  const rowOf = new Map<string, number>();
  const keyRows: string[] = [];
  for (const key of keys) {
    const ends: number[] = [];
    const holds = detailed ? [...grants.values()].filter((g) => g.key === key && heldInterval(g, 'acked') && visible(g.createHi.at, g.ackedEnd.at)) : [];
    for (const g of holds.sort((a, b) => a.createHi.at - b.createHi.at)) {
      let row = ends.findIndex((end) => end <= g.createHi.at);
      if (row < 0) row = ends.push(0) - 1;
      ends[row] = g.ackedEnd.at;
      rowOf.set(`${g.key}\u0000${g.token}`, keyRows.length + row);
    }
    const rows = Math.max(1, ends.length);
    for (let i = 0; i < rows; i += 1) keyRows.push(i === 0 ? `key ${key}` : `key ${key} (${i + 1})`);
    if (!detailed) rowOf.set(key, keyRows.length - 1);
  }
  const lanes = [...keyRows, ...processes];
  const height = 30 + lanes.length * LANE + 10;
  const parts: string[] = [];
  // Axis.
  const step = niceStep(span / 10);
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    parts.push(`<line x1="${x(t)}" y1="20" x2="${x(t)}" y2="${height}" stroke="#eee"/><text x="${x(t) + 2}" y="14" font-size="10">${(t / 1000).toFixed(step < 1000 ? 2 : 0)} s</text>`);
  }
  if (focus) {
    const fx = x(focus.window[0]);
    const fw = Math.max(2, x(Number.isFinite(focus.window[1]) ? focus.window[1] : t1) - fx);
    parts.push(`<rect x="${fx}" y="20" width="${fw}" height="${height - 20}" fill="${focus.verdict === 'violation' ? '#e74c3c' : '#f5b041'}" opacity="0.18"><title>${esc(focus.message)}</title></rect>`);
  }
  lanes.forEach((lane, i) => parts.push(`<text x="4" y="${30 + i * LANE + 12}" font-size="11">${esc(lane.slice(0, 26))}</text>`));
  const involved = new Set(focus?.ops ?? []);
  const focusTokens = new Set(focus ? [...grants.values()].filter((g) => g.ops.some((i) => involved.has(i))).map((g) => g.token) : []);
  if (!detailed) {
    // The whole run: per key, holds closer than a pixel merge into one bar (a long run has tens of thousands).
    const pixel = span / (WIDTH - LABEL - 10);
    for (const key of keys) {
      const spans = [...grants.values()]
        .filter((g) => g.key === key)
        .map((g) => heldInterval(g, 'certain'))
        .filter((i): i is [number, number] => i !== undefined)
        .map(([a, b]): [number, number] => [a, Number.isFinite(b) ? b : t1])
        .sort((a, b) => a[0] - b[0]);
      const merged: [number, number][] = [];
      for (const [a, b] of spans) {
        const last = merged.at(-1);
        if (last && a - last[1] < pixel) last[1] = Math.max(last[1], b);
        else merged.push([a, b]);
      }
      const y = 30 + rowOf.get(key)! * LANE + 2;
      for (const [a, b] of merged) parts.push(`<rect x="${x(a)}" y="${y}" width="${Math.max(1, x(b) - x(a))}" height="${LANE - 4}" fill="#27ae60"/>`);
    }
  }
  for (const g of detailed ? grants.values() : []) {
    const certain = heldInterval(g, 'certain');
    const acked = heldInterval(g, 'acked');
    const y = 30 + (rowOf.get(`${g.key}\u0000${g.token}`) ?? 0) * LANE + 2;
    const stroke = focusTokens.has(g.token) ? ' stroke="#b03a2e" stroke-width="2"' : '';
    const tip = `<title>token ${g.token} session ${g.sessionId}\ncertainly held ${certain ? `${certain[0].toFixed(1)}–${certain[1].toFixed(1)} ms` : 'never'}</title>`;
    if (acked && visible(acked[0], acked[1])) {
      const end = Number.isFinite(acked[1]) ? acked[1] : t1;
      parts.push(`<rect x="${x(acked[0])}" y="${y}" width="${Math.max(1, x(end) - x(acked[0]))}" height="${LANE - 4}" fill="#abebc6" opacity="0.6">${tip}</rect>`);
    }
    if (certain && visible(certain[0], certain[1])) {
      const end = Number.isFinite(certain[1]) ? certain[1] : t1;
      parts.push(`<rect x="${x(certain[0])}" y="${y}" width="${Math.max(1, x(end) - x(certain[0]))}" height="${LANE - 4}" fill="#27ae60"${stroke}>${tip}</rect>`);
      if (detailed && x(end) - x(certain[0]) > 40) parts.push(`<text x="${x(certain[0]) + 2}" y="${y + 11}" font-size="9" fill="#fff">${g.token}</text>`);
    }
  }
  for (const op of history.ops) {
    const lane = processes.indexOf(op.process);
    if (lane < 0 || !visible(op.invokeAt, op.completeAt)) continue;
    if (!detailed && op.f !== 'fault') continue;
    parts.push(opBar(op, x, 30 + (keyRows.length + lane) * LANE + 3, involved.has(op.index)));
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="system-ui,sans-serif">${parts.join('')}</svg>`;
}

function opBar(op: HistoryOp, x: (t: number) => number, y: number, marked: boolean): string {
  const x0 = x(op.invokeAt);
  const w = Math.max(2, x(op.completeAt) - x0);
  const fill = op.outcome === 'fail' ? '#d5d8dc' : (COLORS[op.f] ?? '#999');
  const dash = op.outcome === 'unknown' ? ' stroke="#e67e22" stroke-dasharray="3,2"' : '';
  const mark = marked ? ' stroke="#b03a2e" stroke-width="2.5"' : dash;
  return `<rect x="${x0}" y="${y}" width="${w}" height="${LANE - 6}" fill="${fill}"${mark}><title>${esc(describeOp(op))}</title></rect>`;
}

function niceStep(raw: number): number {
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-3)));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}
