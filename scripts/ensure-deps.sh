#!/usr/bin/env bash
# Installs what Holdfast needs on a fresh machine: npm packages (from the lock
# file) and, for the test suite, Debian's etcd, Chromium, promtool and Alertmanager (amtool);
# --bench adds Debian's redis-server (the Redlock row of `npm run bench:peers`, which also
# installs it by itself when missing).
# Usage: scripts/ensure-deps.sh [--test | --bench]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "holdfast: installing npm packages (npm ci)…"
  npm ci --no-audit --no-fund
fi

if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  missing=()
  if [ "${1:-}" = "--bench" ]; then
    [ -x /usr/bin/redis-server ] || missing+=(redis-server)
  fi
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v amtool >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
  [ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "holdfast: installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi
