/**
 * Deadlock resolution as a pure function over the wait-for graph (waiting session →
 * session holding the key it waits for): find a cycle, answer its youngest wait, take
 * that wait out of the graph, look again. Iterative search (an explicit stack, so a chain
 * of any length cannot overflow) with a bounded number of steps per check; the victim
 * choice depends only on the edges, so any instance reading the same graph chooses alike.
 */
import type { DeadlockVerdict, WaitEdge } from '../store/spi.js';

export interface DeadlockCheckLimits {
  /** Edge visits per check, across all searches; the rest waits for the next check. */
  maxSteps: number;
  /** Victims per check. */
  maxVictims: number;
}

export const DEFAULT_DEADLOCK_LIMITS: DeadlockCheckLimits = { maxSteps: 200_000, maxVictims: 100 };

type Edge = Pick<WaitEdge, 'waitId' | 'sessionId' | 'holderSessionId' | 'key' | 'startedAt'>;

/** The youngest wait first: latest start, then the larger id (a total order every instance shares). */
function younger(a: Edge, b: Edge): boolean {
  return a.startedAt !== b.startedAt ? a.startedAt > b.startedAt : a.waitId > b.waitId;
}

export function chooseDeadlockVictims(edges: readonly Edge[], limits: DeadlockCheckLimits = DEFAULT_DEADLOCK_LIMITS): DeadlockVerdict[] {
  const live = [...edges].sort((a, b) => (a.waitId < b.waitId ? -1 : a.waitId > b.waitId ? 1 : 0));
  const removed = new Set<string>();
  const verdicts: DeadlockVerdict[] = [];
  const budget = { steps: limits.maxSteps };
  while (verdicts.length < limits.maxVictims) {
    const cycle = findCycle(live, removed, budget);
    if (!cycle) break;
    let victim = cycle[0]!;
    for (const edge of cycle) if (younger(edge, victim)) victim = edge;
    removed.add(victim.waitId);
    verdicts.push({
      waitId: victim.waitId,
      sessions: cycle.map((e) => e.sessionId),
      keys: cycle.map((e) => e.key),
    });
  }
  return verdicts;
}

/**
 * One cycle of edges (each edge's holder is the next edge's waiter), or null. Depth-first
 * with colours: reaching a session still on the path closes a cycle.
 */
export function findCycle(edges: readonly Edge[], removed: ReadonlySet<string> = new Set(), budget = { steps: Infinity }): Edge[] | null {
  const out = new Map<string, Edge[]>();
  for (const edge of edges) {
    if (removed.has(edge.waitId)) continue;
    let list = out.get(edge.sessionId);
    if (!list) out.set(edge.sessionId, (list = []));
    list.push(edge);
  }
  const done = new Set<string>();
  const onPath = new Map<string, number>();
  for (const root of [...out.keys()].sort()) {
    if (done.has(root)) continue;
    // path[i] is the edge taken out of the i-th session on the path; frames hold each session's next edge index.
    const sessions: string[] = [root];
    const next: number[] = [0];
    const path: Edge[] = [];
    onPath.set(root, 0);
    while (sessions.length > 0) {
      if (budget.steps-- <= 0) return null;
      const depth = sessions.length - 1;
      const session = sessions[depth]!;
      const list = out.get(session) ?? [];
      const index = next[depth]!;
      if (index >= list.length) {
        sessions.pop();
        next.pop();
        path.pop();
        onPath.delete(session);
        done.add(session);
        continue;
      }
      next[depth] = index + 1;
      const edge = list[index]!;
      const target = edge.holderSessionId;
      const at = onPath.get(target);
      if (at !== undefined) {
        onPath.clear();
        return [...path.slice(at), edge];
      }
      if (done.has(target)) continue;
      path.push(edge);
      sessions.push(target);
      next.push(0);
      onPath.set(target, sessions.length - 1);
    }
  }
  return null;
}
