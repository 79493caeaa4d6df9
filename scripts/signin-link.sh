#!/usr/bin/env bash
# Prints a one-time sign-in link for the console (valid once, for five minutes),
# signing in as the embedded store's local operator. `npm start` runs it once;
# `npm run signin-link` prints a fresh one later.
#
# The operator token never goes into the link, a URL or a command line: node reads
# it from the local token file and hands it to the console's /api/auth/codes in an
# Authorization header; the console answers with a code that signs in once.
#
# Env: HOLDFAST_DATA_DIR (./.holdfast), PORT (3000, the console), HOLDFAST_ADMIN_TOKENS_FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

CONSOLE_URL="http://127.0.0.1:${PORT:-3000}"
TOKEN_FILE="${HOLDFAST_ADMIN_TOKENS_FILE:-${HOLDFAST_DATA_DIR:-./.holdfast}/admin-tokens.json}"

if [ ! -f "$TOKEN_FILE" ]; then
  printf 'holdfast: no token file at %s; sign in at %s/signin with your token\n' "$TOKEN_FILE" "$CONSOLE_URL" >&2
  exit 1
fi

node -e '
  const [file, consoleUrl] = process.argv.slice(1);
  const fail = (why) => {
    process.stderr.write(`holdfast: could not mint a sign-in code (${why}); sign in at ${consoleUrl}/signin with a token\n`);
    process.exit(1);
  };
  let entries;
  try {
    entries = JSON.parse(require("node:fs").readFileSync(file, "utf8"));
  } catch (error) {
    fail(`cannot read ${file}: ${error.message}`);
  }
  const operator = Array.isArray(entries) ? entries.find((e) => e && e.role === "operator") : undefined;
  if (!operator) fail(`no operator token in ${file}`);
  fetch(`${consoleUrl}/api/auth/codes`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator.token}` },
    signal: AbortSignal.timeout(10000),
  })
    .then(async (response) => {
      const body = await response.json().catch(() => ({}));
      if (response.status !== 201 || typeof body.path !== "string") {
        fail(`${response.status} ${body.error ? body.error.code : ""}`.trim());
      }
      process.stdout.write(`${consoleUrl}${body.path}\n`);
    })
    .catch((error) => fail(error.message));
' "$TOKEN_FILE" "$CONSOLE_URL"
