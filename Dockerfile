# feishu-progress-bot as a container (docs/deploy.md). Two stages: the builder compiles better-sqlite3 (a
# native addon) and the service; the runtime stage gets the compiled JavaScript and production node_modules.
# No container engine runs in this project's CI: test/deploy-files.test.ts checks this file's structure.

# ---- build: dev dependencies, the compiler, node-gyp's toolchain ----
FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary fits (README: what npm install needs).
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The lockfile first: this layer is rebuilt only when the dependencies change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.browser.json feishu-app.json ./
COPY scripts ./scripts
COPY src ./src
# dist/: tsc's JavaScript, the pages' assets and their prebuilt browser bundles (scripts/build.ts).
RUN npm run build
# What the runtime stage copies: production dependencies only (esbuild stays, it is one: web/bundle.ts loads it).
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime: node, the built service, no compiler ----
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
# One SQLite database and the bot's other state live here; one process per DATA_DIR (DATA_DIR/bot.lock).
ENV DATA_DIR=/data
ENV PORT=3000
# HOST stays unset: in feishu mode the bot then listens on every interface, as a container needs. Local mode
# (no FEISHU_APP_ID) keeps to the container's loopback, so its console is not published by accident.
WORKDIR /app
# The application's files belong to root and are read-only to the bot; only /data is its own.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/feishu-app.json ./feishu-app.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
VOLUME /data
# The image's own non-root user (uid 1000).
USER node
EXPOSE 3000
# /healthz with node itself (the slim image has no curl); 127.0.0.1 answers in both modes.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The bot drains on SIGTERM within 8 s (src/main.ts), inside the 10 s `docker stop` waits before SIGKILL.
# Exec form: node itself gets the signal, with no shell in between.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
