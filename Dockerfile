# syntax=docker/dockerfile:1
# The Holdfast lock server, compiled (no tsx, no console, no dev dependencies), as a non-root user.
#   docker build -t holdfast .
#   deploy/generate-credentials.sh ./credentials && sudo chown -R 1000 ./credentials   (the image's user; files 0600)
#   docker run -p 7070:7070 -v "$PWD/credentials:/run/holdfast:ro" \
#     -e HOLDFAST_ADMIN_TOKENS_FILE=/run/holdfast/tokens.json -e HOLDFAST_AUDIT_KEY_FILE=/run/holdfast/audit.key \
#     -e HOLDFAST_STORE=postgres -e DATABASE_URL=postgres://… holdfast
# The embedded store keeps its files in /var/lib/holdfast (mount a volume there to keep them).
# deploy/compose.yaml and deploy/kubernetes/ run this image; test/deploy/ checks this file statically.

# --- build: full install, compile server/, lock/, exporter/, contract/, cli/ into dist/ ---
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY client/package.json client/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.build.json ./
COPY contract contract
COPY server server
COPY lock lock
COPY exporter exporter
COPY cli cli
RUN npx tsc -p tsconfig.build.json

# --- runtime dependencies only (npm ci --omit=dev: no Next.js, no TypeScript) ---
FROM node:20-bookworm-slim AS runtime-deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json client/package.json
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- the image ---
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOLDFAST_HOST=0.0.0.0 \
    HOLDFAST_PORT=7070 \
    HOLDFAST_DATA_DIR=/var/lib/holdfast
WORKDIR /app
COPY --from=runtime-deps /app/node_modules node_modules
COPY --from=runtime-deps /app/package.json package.json
COPY --from=runtime-deps /app/client/package.json client/package.json
COPY --from=build /src/dist dist
COPY bin bin
RUN mkdir -p /var/lib/holdfast && chown node:node /var/lib/holdfast
# The node image's unprivileged user (uid 1000).
USER node
EXPOSE 7070
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HOLDFAST_PORT || 7070) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/holdfast.js"]
CMD ["server"]
