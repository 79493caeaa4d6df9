/**
 * The wait-for graph as data (GET /v1/admin/waits): who waits for which key,
 * held by whom, and the cycles (deadlocks) among them. Sessions are the nodes;
 * a waiter whose holder is known is an edge waiter → holder.
 */
import type { WaitEdge } from '../../contract/insight.js';

export type { WaitEdge };

/**
 * Whether an edge can be part of a deadlock: a wait for a mutex key's holder. A key that admits
 * several holders frees up when any one of them leaves, so a cycle through it need not be one
 * (spi.ts "Multi-holder keys"); the operator still sees its edges.
 */
export function canDeadlock(edge: { holderKind?: string | undefined }): boolean {
  return edge.holderKind === undefined;
}

/**
 * The sessions of each cycle: strongly connected components (Tarjan) with more
 * than one session, or one session waiting for itself. Each cycle lists its
 * sessions sorted; cycles are sorted by their first session, for stable answers.
 */
export function findCycles(waits: readonly WaitEdge[]): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const w of waits) {
    if (!w.holderSessionId || !canDeadlock(w)) continue;
    let targets = edges.get(w.waiterSessionId);
    if (!targets) edges.set(w.waiterSessionId, (targets = new Set()));
    targets.add(w.holderSessionId);
  }
  let index = 0;
  const indices = new Map<string, number>();
  const lowlink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    lowlink.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        lowlink.set(v, Math.min(lowlink.get(v)!, lowlink.get(w)!));
      } else if (onStack.has(w)) {
        lowlink.set(v, Math.min(lowlink.get(v)!, indices.get(w)!));
      }
    }
    if (lowlink.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || edges.get(v)?.has(v)) cycles.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!indices.has(v)) visit(v);
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
}
