'use client';
/**
 * The wait-for graph drawn as SVG: sessions on a circle, an arrow from each
 * waiting session to the session holding the key it waits for (labelled with
 * the key), and every session and arrow of a cycle (deadlock) in red. A wait on a
 * key that admits several holders (a semaphore, a shared lock) has a dashed arrow
 * to each holder: any one of them leaving frees it, so it closes no deadlock.
 */
import type { WaitEdge } from '../lib/insight-types';
import { shortId } from '../lib/format';

const SIZE = 560;
const RADIUS = 200;
const NODE_RADIUS = 22;
/** How far an arrow bows out of the straight line, so two opposite waits do not overlap. */
const BEND = 60;

export function WaitGraphSvg({ items, cycles }: { items: WaitEdge[]; cycles: string[][] }) {
  const cycleOf = new Map<string, number>();
  cycles.forEach((cycle, i) => cycle.forEach((session) => cycleOf.set(session, i)));
  const nodes = [...new Set(items.flatMap((w) => (w.holderSessionId ? [w.waiterSessionId, w.holderSessionId] : [w.waiterSessionId])))].sort();
  const at = new Map(
    nodes.map((session, i) => {
      const angle = (2 * Math.PI * i) / Math.max(1, nodes.length) - Math.PI / 2;
      const r = nodes.length === 1 ? 0 : RADIUS;
      return [session, { x: SIZE / 2 + r * Math.cos(angle), y: SIZE / 2 + r * Math.sin(angle) }] as const;
    }),
  );
  const inCycle = (w: WaitEdge) =>
    w.holderSessionId !== null && w.holderKind === undefined && cycleOf.has(w.waiterSessionId) && cycleOf.get(w.waiterSessionId) === cycleOf.get(w.holderSessionId);
  return (
    <svg
      className="wait-graph"
      viewBox={`0 0 ${SIZE} ${SIZE}`}
      role="img"
      aria-label={`Wait-for graph: ${nodes.length} sessions, ${items.length} waits, ${cycles.length} cycles`}
      data-testid="wait-graph"
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#8ea3b8" />
        </marker>
        <marker id="arrow-cycle" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#ff6b6b" />
        </marker>
      </defs>
      {items.map((w, i) => {
        if (!w.holderSessionId) return null;
        const from = at.get(w.waiterSessionId)!;
        const to = at.get(w.holderSessionId)!;
        const cycle = inCycle(w);
        const dx = to.x - from.x;
        const dy = to.y - from.y;
        const length = Math.hypot(dx, dy) || 1;
        // Start and end on the circles' rims; bend a little so two opposite waits do not overlap.
        const sx = from.x + (dx / length) * NODE_RADIUS;
        const sy = from.y + (dy / length) * NODE_RADIUS;
        const ex = to.x - (dx / length) * NODE_RADIUS;
        const ey = to.y - (dy / length) * NODE_RADIUS;
        // The unit normal the curve bows along; the label sits just outside the curve's midpoint.
        const nx = -dy / length;
        const ny = dx / length;
        const cx = (sx + ex) / 2 + nx * BEND;
        const cy = (sy + ey) / 2 + ny * BEND;
        const lx = (sx + ex) / 4 + cx / 2 + nx * 6;
        const ly = (sy + ey) / 4 + cy / 2 + ny * 6 + 4;
        const anchor = nx > 0.3 ? 'start' : nx < -0.3 ? 'end' : 'middle';
        return (
          <g key={`${w.waiterSessionId}-${w.key}-${i}`} data-testid="wait-edge" data-cycle={cycle ? 'yes' : 'no'} data-key={w.key} data-kind={w.holderKind ?? 'mutex'}>
            <path
              d={`M ${sx} ${sy} Q ${cx} ${cy} ${ex} ${ey}`}
              fill="none"
              stroke={cycle ? '#ff6b6b' : '#8ea3b8'}
              strokeWidth={cycle ? 2.5 : 1.5}
              strokeDasharray={w.holderKind ? '5 4' : undefined}
              markerEnd={cycle ? 'url(#arrow-cycle)' : 'url(#arrow)'}
            />
            <text x={lx} y={ly} className="wait-label" textAnchor={anchor} fill={cycle ? '#ffb4b1' : '#c9d4df'}>
              {w.key.length > 24 ? `${w.key.slice(0, 23)}…` : w.key}
            </text>
          </g>
        );
      })}
      {nodes.map((session) => {
        const p = at.get(session)!;
        const cycle = cycleOf.has(session);
        return (
          <g key={session} data-testid="wait-node" data-session={session} data-cycle={cycle ? 'yes' : 'no'}>
            <title>{session}</title>
            <circle cx={p.x} cy={p.y} r={NODE_RADIUS} fill={cycle ? '#3a1416' : '#16202b'} stroke={cycle ? '#ff6b6b' : '#5aa9ff'} strokeWidth={2} />
            <text x={p.x} y={p.y + (p.y > SIZE / 2 ? NODE_RADIUS + 16 : -NODE_RADIUS - 8)} textAnchor="middle" className="wait-node-label" fill="#e6edf3">
              {shortId(session)}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
