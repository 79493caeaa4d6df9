/**
 * The protected resource's side of fencing, as a test oracle: it accepts a
 * write only if its token is at least the highest it has seen for that key.
 */
export class FencedResourceRecorder {
  private readonly highest = new Map<string, bigint>();
  readonly rejected: { key: string; token: string; highest: string }[] = [];
  accepted = 0;

  write(key: string, token: string): boolean {
    const value = BigInt(token);
    const seen = this.highest.get(key);
    if (seen !== undefined && value < seen) {
      this.rejected.push({ key, token, highest: seen.toString() });
      return false;
    }
    this.highest.set(key, value);
    this.accepted++;
    return true;
  }
}

/**
 * The workloads' clock for ObservedGrant: epoch milliseconds like Date.now(), so an instant a test
 * takes with Date.now() compares with it, but monotonic and sub-millisecond, so findOverlaps sees a
 * grant that arrived within the same millisecond as the previous holder's release was sent.
 */
export function observedNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface ObservedGrant {
  key: string;
  token: bigint;
  /** Client time the acquire request was sent (performance.now(), or observedNow() in the shared workloads). */
  requestedAt: number;
  /** Client time the grant arrived. */
  grantedAt: number;
  /** Client time the release request was sent. */
  releasedAt: number;
}

/** Grants of one key, ordered by token, must not overlap: each release is sent before the next grant arrives. */
export function findOverlaps(grants: ObservedGrant[]): string[] {
  const problems: string[] = [];
  const byKey = new Map<string, ObservedGrant[]>();
  for (const g of grants) byKey.set(g.key, [...(byKey.get(g.key) ?? []), g]);
  for (const [key, list] of byKey) {
    list.sort((a, b) => (a.token < b.token ? -1 : 1));
    for (let i = 1; i < list.length; i++) {
      if (list[i]!.grantedAt < list[i - 1]!.releasedAt) {
        problems.push(`${key}: token ${list[i]!.token} granted before token ${list[i - 1]!.token} was released`);
      }
    }
  }
  return problems;
}

/** Any grant that completed before another was requested must carry a smaller token. */
export function findTokenOrderViolations(grants: ObservedGrant[]): string[] {
  const problems: string[] = [];
  const byCompletion = [...grants].sort((a, b) => a.grantedAt - b.grantedAt);
  const byRequest = [...grants].sort((a, b) => a.requestedAt - b.requestedAt);
  let maxCompleted = -1n;
  let i = 0;
  for (const grant of byRequest) {
    while (i < byCompletion.length && byCompletion[i]!.grantedAt < grant.requestedAt) {
      if (byCompletion[i]!.token > maxCompleted) maxCompleted = byCompletion[i]!.token;
      i++;
    }
    if (grant.token <= maxCompleted) problems.push(`token ${grant.token} is not above an earlier completed grant (${maxCompleted})`);
  }
  const unique = new Set(grants.map((g) => g.token));
  if (unique.size !== grants.length) problems.push(`${grants.length - unique.size} duplicate tokens`);
  return problems;
}

/** What a workload needs of a lock handle (either SDK release's: the roll test runs both). */
export interface FencedHandle {
  readonly fencingToken: string;
  readonly lost: boolean;
  readonly signal: AbortSignal;
}

/**
 * One hold as the workloads make it: a write through the fence at once, `workMillis` of work, and
 * the write a paused or slow holder makes at the end of it (skipped once the handle reports lost).
 * Answers when the grant ended for this holder: when the handle was lost, else now.
 */
export async function holdThroughFence(recorder: FencedResourceRecorder, key: string, handle: FencedHandle, workMillis: number): Promise<{ lost: boolean; releasedAt: number }> {
  let lostAt: number | undefined;
  handle.signal.addEventListener('abort', () => {
    if (handle.lost) lostAt = observedNow();
  });
  recorder.write(key, handle.fencingToken);
  await new Promise((r) => setTimeout(r, workMillis));
  if (!handle.lost) recorder.write(key, handle.fencingToken);
  return { lost: handle.lost, releasedAt: lostAt ?? observedNow() };
}
