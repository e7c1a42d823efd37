# The receivables API on Node 24 LTS. Stages:
#   deps       all dependencies, for the build;
#   prod-deps  production dependencies only, a stage of its own so that its layer is reused until
#              package.json or the lockfile changes (no `npm prune` over the build's node_modules);
#   build      type check and bundle (scripts/build.mjs) into dist/;
#   runtime    the bundles and production node_modules, owned by root and read-only for the
#              unprivileged `node` user that runs them.
# Build: docker build -t receivables-api .   Stop with a grace of 30 s (docker stop -t 30, compose's
# stop_grace_period: 30s): the drain after SIGTERM is bounded by SHUTDOWN_TIMEOUT, 25 s by default.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
# argon2 and bcrypt ship prebuilt addons for glibc on x64 and arm64: no compiler needed.
RUN npm ci --omit=dev --no-audit --no-fund

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY schemas ./schemas
COPY db ./db
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    PGLITE_DIR=/app/data/pglite
WORKDIR /app
# Owned by root (COPY's default), files 0644: the service can read its code, not change it.
# package.json: its "type": "module" makes Node load dist/*.js as ES modules.
COPY package.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The one writable place, for the embedded database only (used when DATABASE_URL is unset, which
# production refuses unless ALLOW_DEMO_DATA=true asks for the demo, with secrets of its own all the
# same: production never runs on the demo secrets): mount a volume there to keep
# it (-v receivables-data:/app/data). No VOLUME instruction: with DATABASE_URL
# nothing is written, and an image VOLUME would leave an anonymous volume behind each container.
RUN mkdir /app/data && chown node:node /app/data
USER node
# 9464: Prometheus metrics (METRICS_PORT), for the scraper, not the gateway: on 127.0.0.1 unless
# METRICS_HOST=0.0.0.0 (compose.yaml sets it, on its internal network; never publish this port).
EXPOSE 3000 9464
# Liveness, not readiness: a database outage makes every instance not-ready at once, and restarting
# them would not bring the database back (readiness is for the gateway or orchestrator: /health/ready).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM starts the drain (readiness 503, serve on with Connection: close, then close); node is
# PID 1 and handles it itself, so no init process is needed.
STOPSIGNAL SIGTERM
# node directly (not npm), so that SIGTERM reaches the service; the same flags as `npm start` (a
# smaller young generation, a slower-growing old one: see README, Performance). The commands run in
# the same image: `node dist/migrate.js [--create-database]` (marks the database production),
# `node dist/seed.js` (ALLOW_DEMO_DATA=true), `node dist/unseed.js` (removes the demo data),
# `node dist/confirmation-link.js EMAIL`.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "dist/server.js"]
