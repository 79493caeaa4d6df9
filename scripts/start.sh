#!/usr/bin/env bash
# `npm start`: the lock server (embedded store, port 7070), the operations console
# (production build, port 3000) and, unless HOLDFAST_DEMO=0, a small demo workload.
# Prints a one-time sign-in link (scripts/signin-link.sh): it carries a code the
# console exchanges once, within five minutes, for a session signed in as the
# local operator — never the operator token itself. Ctrl-C stops everything.
#
# Env: HOLDFAST_STORE, HOLDFAST_PORT (7070), HOLDFAST_DATA_DIR (./.holdfast),
#      HOLDFAST_ADMIN_TOKENS_FILE, PORT (3000, the console), HOLDFAST_DEMO (1),
#      HOLDFAST_CONSOLE_SECRET_FILE (default: $HOLDFAST_DATA_DIR/console-secret, created 0600).
set -euo pipefail
cd "$(dirname "$0")/.."

export NEXT_TELEMETRY_DISABLED=1
HOLDFAST_PORT="${HOLDFAST_PORT:-7070}"
CONSOLE_PORT="${PORT:-3000}"
DATA_DIR="${HOLDFAST_DATA_DIR:-./.holdfast}"
export HOLDFAST_PORT
export HOLDFAST_URL="${HOLDFAST_URL:-http://127.0.0.1:${HOLDFAST_PORT}}"

say() { printf 'holdfast: %s\n' "$*" >&2; }

bash scripts/ensure-deps.sh

# --- build the console when the build is missing or older than its sources ---
build_is_stale() {
  [ -f .next/BUILD_ID ] || return 0
  local newer
  newer=$(find app next.config.ts package-lock.json contract/records.ts -newer .next/BUILD_ID -print -quit 2>/dev/null)
  [ -n "$newer" ]
}
if build_is_stale; then
  say "building the console (next build, ~30 s the first time)…"
  node node_modules/next/dist/bin/next build >/tmp/holdfast-next-build.$$.log 2>&1 || {
    cat /tmp/holdfast-next-build.$$.log >&2
    say "console build failed"
    exit 1
  }
  rm -f /tmp/holdfast-next-build.$$.log
fi

pids=()
stopping=0
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  say "stopping…"
  # One at a time in reverse start order: the demo closes its sessions while the server still answers.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[$i]}" 2>/dev/null || true
    wait "${pids[$i]}" 2>/dev/null || true
  done
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

wait_for() { # url, name, pid, seconds
  local deadline=$((SECONDS + $4))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    if ! kill -0 "$3" 2>/dev/null; then say "$2 exited during startup"; exit 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then say "$2 did not answer at $1 within $4 s"; exit 1; fi
    sleep 0.3
  done
}

# --- compile the lock server when dist/ is missing or older than its sources ---
# bin/holdfast.js runs dist/ with plain node when it is current, else the sources through tsx, whose
# loader holds some 50 MB more (bench/embedded-memory.ts); the embedded default should be light.
server_build_is_stale() {
  [ -f dist/cli/main.js ] || return 0
  local newer
  newer=$(find server lock exporter contract cli client -name '*.ts' -newer dist/cli/main.js -not -path '*/node_modules/*' -not -path '*/dist/*' -print -quit 2>/dev/null)
  [ -n "$newer" ]
}
if server_build_is_stale; then
  say "compiling the lock server (tsc, ~20 s)…"
  node node_modules/typescript/bin/tsc -p tsconfig.build.json >/tmp/holdfast-server-build.$$.log 2>&1 ||
    say "server compile failed (see /tmp/holdfast-server-build.$$.log); running the sources through tsx instead"
fi

# --- lock server ---
# Its JSON event log goes to a file so the sign-in link below stays readable; its own notices stay on the terminal.
mkdir -p "$DATA_DIR"
SERVER_LOG="${DATA_DIR}/server.log"
node bin/holdfast.js server >>"$SERVER_LOG" &
pids+=($!)
wait_for "${HOLDFAST_URL}/readyz" "the lock server" "${pids[0]}" 60

# --- console ---
# The console's seal secret lives in a file (0600, like the tokens file) so a console restart keeps
# everyone signed in, and a second console replica started with the same file shares sign-ins.
if [ -z "${HOLDFAST_CONSOLE_SECRET_FILE:-}" ]; then
  HOLDFAST_CONSOLE_SECRET_FILE="${DATA_DIR}/console-secret"
  if [ ! -f "$HOLDFAST_CONSOLE_SECRET_FILE" ]; then
    (umask 077 && node -e 'process.stdout.write(require("node:crypto").randomBytes(32).toString("hex") + "\n")' >"$HOLDFAST_CONSOLE_SECRET_FILE")
  fi
fi
export HOLDFAST_CONSOLE_SECRET_FILE
node node_modules/next/dist/bin/next start -p "$CONSOLE_PORT" -H 127.0.0.1 >/dev/null &
pids+=($!)
wait_for "http://127.0.0.1:${CONSOLE_PORT}/signin" "the console" "${pids[1]}" 60

# --- demo workload ---
if [ "${HOLDFAST_DEMO:-1}" != "0" ]; then
  node --import tsx demo/run.ts &
  pids+=($!)
fi

# --- sign-in link (one-time code; the token stays in its file) ---
link="http://127.0.0.1:${CONSOLE_PORT}/signin"
link_intro="Sign in with your token from HOLDFAST_ADMIN_TOKENS_FILE at:"
if [ -z "${HOLDFAST_ADMIN_TOKENS_FILE:-}" ]; then
  link_intro="Sign in with a token at:"
  if minted=$(HOLDFAST_DATA_DIR="$DATA_DIR" PORT="$CONSOLE_PORT" bash scripts/signin-link.sh); then
    link="$minted"
    link_intro="Open this link to sign in as the local operator (valid once, for five minutes; \`npm run signin-link\` prints a new one):"
  fi
fi
cat >&2 <<MSG

  Holdfast is running.
    lock server  ${HOLDFAST_URL}   (metrics: ${HOLDFAST_URL}/metrics, event log: ${SERVER_LOG})
    console      http://127.0.0.1:${CONSOLE_PORT}
    demo         $([ "${HOLDFAST_DEMO:-1}" != "0" ] && echo "payout workers running (HOLDFAST_DEMO=0 to turn off)" || echo "off")

  ${link_intro}
    ${link}

  Ctrl-C stops everything.

MSG

# Exit when any child exits (or on Ctrl-C), then stop the rest.
wait -n "${pids[@]}" || true
say "a process exited; stopping the others"
