# syntax=docker/dockerfile:1
# Build stage: type-check and bundle the TypeScript (scripts/build.mjs), then keep production
# dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY schemas ./schemas
COPY db ./db
RUN npm run build && npm prune --omit=dev

# Runtime stage: the bundles and production node_modules (the packages left out of the bundles, and
# the files bundled packages read: the docs UI's assets), run as the unprivileged `node` user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    PGLITE_DIR=/app/data/pglite
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The embedded database (used only without DATABASE_URL) lives in a volume the node user owns.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
# 9464: Prometheus metrics (METRICS_PORT), for the scraper, not the gateway.
EXPOSE 3000 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node directly (not npm), so that SIGTERM reaches the service and it shuts down gracefully; the
# same flags as `npm start` (a smaller young generation, a slower-growing old one: see README,
# Performance).
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "dist/server.js"]
