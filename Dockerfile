# The Anteroom edge with its bundled booking origin, as `npm start` runs it: `docker compose up --build` (compose.yaml).
# Not built in CI (no Docker engine there): test/container-dockerfile.test.ts checks these lines, test/container.test.ts runs the steps without an engine.

# Production dependencies only, from the lock file. The build tools never reach the runtime stage.
FROM node:20.20.2-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20.20.2-bookworm-slim AS runtime
# The edge listens on 127.0.0.1 unless told otherwise, which no one outside a container could reach.
ENV NODE_ENV=production \
    ANTEROOM_HOST=0.0.0.0
WORKDIR /app
# With no admin token configured, the edge writes one to ./.anteroom/admin-token, so node must own its directory.
RUN chown node:node /app
COPY --chown=node:node --from=deps /app/node_modules ./node_modules
# tsconfig.json: tsx compiles with the same settings as `npm start`. The lock file tells scanners what the image holds.
COPY --chown=node:node package.json package-lock.json tsconfig.json ./
# src/entry/node.ts imports src/ and admin/ (and reads admin/ui and the SQL files at run time); nothing else runs.
COPY --chown=node:node src ./src
COPY --chown=node:node admin ./admin
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ANTEROOM_PORT || 8080) + '/_anteroom/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# What `npm start` runs (tsx src/entry/node.ts), with node itself as the container's process so that
# SIGTERM from `docker stop` reaches the edge's own handler, which closes the servers and the stores.
CMD ["node", "--import", "tsx", "src/entry/node.ts"]
