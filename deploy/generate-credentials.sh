#!/usr/bin/env bash
# Generates Holdfast's credentials into DIR with openssl (nothing is committed, nothing is a default):
#   deploy/generate-credentials.sh DIR
#   DIR/tokens.json     HOLDFAST_ADMIN_TOKENS_FILE: operator "on-call" and viewer "console-viewer"
#   DIR/audit.key       HOLDFAST_AUDIT_KEY_FILE: the audit chain's HMAC key
#   DIR/operator.token  the operator token alone, for the CLI (HOLDFAST_TOKEN_FILE)
#   DIR/viewer.token    the viewer token alone, for the console or dashboards
# Every secret is `openssl rand -hex 32` (256 bits); every file is 0600 (umask 077) and DIR 0700.
# Refuses to overwrite: rotating is deliberate (move the old files away first).
# Used by deploy/systemd/holdfast.service's install steps and deploy/kubernetes/create-secrets.sh.
set -euo pipefail
umask 077

dir="${1:?usage: deploy/generate-credentials.sh DIR}"
for name in tokens.json audit.key operator.token viewer.token; do
  if [ -e "$dir/$name" ]; then
    printf 'generate-credentials: %s already exists; not overwriting it (move it away to rotate)\n' "$dir/$name" >&2
    exit 1
  fi
done
mkdir -p "$dir"
chmod 700 "$dir"

operator="$(openssl rand -hex 32)"
viewer="$(openssl rand -hex 32)"
printf '%s\n' "$operator" > "$dir/operator.token"
printf '%s\n' "$viewer" > "$dir/viewer.token"
printf '[\n  { "name": "on-call", "token": "%s", "role": "operator" },\n  { "name": "console-viewer", "token": "%s", "role": "viewer" }\n]\n' \
  "$operator" "$viewer" > "$dir/tokens.json"
openssl rand -hex 32 > "$dir/audit.key"
printf 'generate-credentials: wrote %s/{tokens.json,audit.key,operator.token,viewer.token} (0600)\n' "$dir" >&2
