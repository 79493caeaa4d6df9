#!/usr/bin/env bash
# Creates the two Secrets deployment.yaml reads, with generated credentials (no Secret is committed):
#   DATABASE_URL='postgres://holdfast:…@db.internal:5432/holdfast' deploy/kubernetes/create-secrets.sh [kubectl options, e.g. -n holdfast]
#
#   holdfast-credentials  tokens.json (operator "on-call", viewer "console-viewer") and audit.key, each secret
#                         `openssl rand -hex 32`, made by deploy/generate-credentials.sh
#   holdfast-database     url: $DATABASE_URL, read from the environment (never put on a command line)
#
# The operator and viewer tokens are left in ./holdfast-credentials/{operator,viewer}.token (0600) for the
# CLI (HOLDFAST_TOKEN_FILE) and the console; store them in your secret manager and delete the directory.
# By hand, the same is:
#   deploy/generate-credentials.sh ./holdfast-credentials
#   kubectl create secret generic holdfast-credentials \
#     --from-file=tokens.json=./holdfast-credentials/tokens.json --from-file=audit.key=./holdfast-credentials/audit.key
#   (umask 077; printf '%s' "$DATABASE_URL" > db-url) && kubectl create secret generic holdfast-database --from-file=url=db-url && rm db-url
set -euo pipefail
umask 077

: "${DATABASE_URL:?set DATABASE_URL (postgres://user:password@host:5432/db) in the environment}"
here="$(cd "$(dirname "$0")" && pwd)"
out="${HOLDFAST_CREDENTIALS_DIR:-./holdfast-credentials}"

"$here/../generate-credentials.sh" "$out"
kubectl "$@" create secret generic holdfast-credentials \
  --from-file=tokens.json="$out/tokens.json" \
  --from-file=audit.key="$out/audit.key"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '%s' "$DATABASE_URL" > "$work/url"
kubectl "$@" create secret generic holdfast-database --from-file=url="$work/url"
printf 'create-secrets: created holdfast-credentials and holdfast-database; the operator token is in %s/operator.token\n' "$out" >&2
