#!/usr/bin/env bash
# Issue 20's acceptance: the README's `npm test` from a fresh clone of this repository's HEAD, optionally
# with one core kept busy for the whole run. Prints a summary (exit code, seconds, files, tests).
# Usage: scripts/fresh-clone-test.sh N [quiet|busy] [COMMIT]   (clone in /tmp/holdfast-clone-N, log in /tmp/holdfast-clone-N.log)
# COMMIT (default HEAD): runs in a row must test one commit, even if main moves meanwhile.
set -uo pipefail
n=${1:?usage: fresh-clone-test.sh N [quiet|busy] [COMMIT]}; mode=${2:-quiet}; commit=${3:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=/tmp/holdfast-clone-$n; log=/tmp/holdfast-clone-$n.log
rm -rf "$dir"; git clone -q "$repo" "$dir"; cd "$dir" || exit 1
if [ -n "$commit" ]; then git checkout -q --detach "$commit" || exit 1; fi
busy_pid=""
if [ "$mode" = busy ]; then
  # Bounded: the loop ends by itself after an hour, and is killed when the run ends.
  taskset -c 0 node -e 'const end = Date.now() + 60 * 60 * 1000; while (Date.now() < end) {}' &
  busy_pid=$!
fi
start=$(date +%s)
npm test > "$log" 2>&1
rc=$?
[ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null
echo "run $n ($mode) commit $(git rev-parse --short HEAD): exit $rc, $(( $(date +%s) - start )) s"
sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "Test Files|Tests  |Duration|passed \(|failed" | tail -10
exit $rc
