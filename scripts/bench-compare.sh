#!/usr/bin/env bash
# `bash scripts/bench-compare.sh BEFORE AFTER [ROUNDS]`: `npm run bench` on two
# commits in one run, rounds interleaved (before, after, before, after, …) so a
# drift in the machine's load touches both sides alike. Each commit runs from
# its own throwaway worktree sharing this checkout's node_modules (so only use
# it for commits whose package-lock.json matches). Logs go to
# /tmp/bench-compare/<commit>-<round>.log; the bench's own knobs (BENCH_*) pass
# through. Prints each log's table lines at the end.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
before="$(git -C "$repo" rev-parse --short "${1:?before commit}")"
after="$(git -C "$repo" rev-parse --short "${2:?after commit}")"
rounds="${3:-2}"
out=/tmp/bench-compare
mkdir -p "$out"

for commit in "$before" "$after"; do
  tree="$out/tree-$commit"
  if [ ! -d "$tree" ]; then
    git -C "$repo" worktree add --detach "$tree" "$commit" >/dev/null
    ln -s "$repo/node_modules" "$tree/node_modules"
  fi
done
cleanup() {
  for commit in "$before" "$after"; do git -C "$repo" worktree remove --force "$out/tree-$commit" 2>/dev/null || true; done
}
trap cleanup EXIT

for round in $(seq 1 "$rounds"); do
  for commit in "$before" "$after"; do
    log="$out/$commit-$round.log"
    echo "round $round: $commit → $log ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    (cd "$out/tree-$commit" && npm run --silent bench) >"$log" 2>&1 || echo "  bench failed on $commit round $round (see $log)"
  done
done

for round in $(seq 1 "$rounds"); do
  for commit in "$before" "$after"; do
    echo "=== $commit round $round"
    grep -E '^\s+c=|^(Uncontended|Contended|Handoff|etcd)' "$out/$commit-$round.log" || true
  done
done
