#!/usr/bin/env bash
# The whole test suite (README's test command: `npm test`). Starts every real
# part it needs itself (PostgreSQL, etcd, Prometheus, Chromium); needs no
# running service. Installs missing npm and Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

bash scripts/ensure-deps.sh --test

step() { printf '\n== %s ==\n' "$*"; }

step "typecheck (tsc --noEmit, strict)"
npx tsc --noEmit -p tsconfig.json

step "unit, integration and fault tests (vitest: real PostgreSQL, etcd, Prometheus)"
npx vitest run

if [ -d app ] && [ -f playwright.config.ts ]; then
  step "console production build (next build)"
  node node_modules/next/dist/bin/next build
  step "console end-to-end tests (Playwright in Debian's Chromium)"
  npx playwright test
fi

printf '\nholdfast: all test stages passed\n'
