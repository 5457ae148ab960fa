#!/usr/bin/env bash
# One entry point for a fresh clone: provides Node >= 22.15 and pnpm (installing Node 24 and pnpm
# from the npm registry into tooling/.toolchain when the machine's are missing or too old),
# installs dependencies, then runs one of:
#   setup                 nothing more
#   build                 builds every package (tooling/scripts/build.sh: a line per package)
#   demo [args]           builds, then runs the demo
#   dashboard             builds, then serves the live dashboard on a sample fleet (see apps/demo)
#   worker [args]         builds, then runs flotilla-worker (apps/worker) with the given flags
#   example <name>        runs an example of examples/ (research | swarm)
#   bench [args]          builds the Lua the benchmarks run from source, then `pnpm bench` (apps/bench)
#   test [vitest args]    every test (builds the Temporal dev server once, with progress)
#   <command> [args]      any other command with the toolchain on the PATH (e.g. pnpm …)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLCHAIN="$ROOT/tooling/.toolchain"
PNPM_VERSION=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$ROOT/package.json")
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 npm_config_update_notifier=false
# Node ignores the system CA store; where a registry is reached through a proxy with its own CA,
# the system bundle is what makes npm and pnpm trust it.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

log() { printf '\033[2m[flotilla]\033[0m %s\n' "$*" >&2; }

node_ok() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=15)?0:1)'
}

ensure_toolchain() {
  if [ -x "$TOOLCHAIN/node_modules/.bin/node" ]; then
    export PATH="$TOOLCHAIN/node_modules/.bin:$PATH"
  fi
  if ! node_ok; then
    log "Node $(node --version 2>/dev/null || echo none) is older than 22.15: installing Node 24 into tooling/.toolchain"
    command -v npm >/dev/null || { log "npm is needed to install Node 24"; exit 1; }
    npm install --prefix "$TOOLCHAIN" --no-audit --no-fund --loglevel=error "node@24" "pnpm@$PNPM_VERSION" >&2
    export PATH="$TOOLCHAIN/node_modules/.bin:$PATH"
  fi
  if [ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]; then
    log "installing pnpm $PNPM_VERSION into tooling/.toolchain"
    npm install --prefix "$TOOLCHAIN" --no-audit --no-fund --loglevel=error "pnpm@$PNPM_VERSION" >&2
    export PATH="$TOOLCHAIN/node_modules/.bin:$PATH"
  fi
  log "node $(node --version), pnpm $(pnpm --version)"
}

ensure_deps() {
  local stamp="$ROOT/node_modules/.flotilla-lock"
  if [ -f "$stamp" ] && cmp -s "$ROOT/pnpm-lock.yaml" "$stamp"; then return; fi
  log "installing dependencies"
  if [ -n "${CI:-}" ]; then
    (cd "$ROOT" && pnpm install --frozen-lockfile --reporter=append-only) >&2
  else
    (cd "$ROOT" && pnpm install --reporter=append-only) >&2
  fi
  cp "$ROOT/pnpm-lock.yaml" "$stamp"
}

# Uses REDIS_URL (default 127.0.0.1:6379); if nothing answers and redis-server is on PATH,
# starts a throwaway Redis on a free port for this run and stops it on exit.
ensure_redis() {
  local url="${REDIS_URL:-redis://127.0.0.1:6379}"
  if node "$ROOT/tooling/scripts/redis-ping.mjs" "$url"; then export REDIS_URL="$url"; return; fi
  command -v redis-server >/dev/null || { log "no Redis answers at $url and redis-server is not on PATH"; exit 1; }
  local port dir
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  dir=$(mktemp -d)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null
  trap "kill \$(cat '$dir/redis.pid' 2>/dev/null) 2>/dev/null || true; rm -rf '$dir'" EXIT
  export REDIS_URL="redis://127.0.0.1:$port"
  for _ in $(seq 50); do node "$ROOT/tooling/scripts/redis-ping.mjs" "$REDIS_URL" && break; sleep 0.1; done
  log "started a throwaway Redis at $REDIS_URL"
}

# The Temporal tests need the dev server binary: built once from the Go module proxy, then cached.
# When it is cached, FLOTILLA_TEMPORAL_BIN names it. When it is not, it is built in the background
# while the other tests run (the Temporal project runs after them, tooling/vitest/groups.ts):
# FLOTILLA_TEMPORAL_PENDING names a file the build writes "ok <path>" or "failed <its log>" into,
# which the Temporal tests wait for (@flotilla/testing's useTemporalBinary).
temporal_in_background() {
  local script="$ROOT/tooling/scripts/temporal.sh" status
  if [ -n "${FLOTILLA_TEMPORAL_BIN:-}" ]; then return; fi
  if FLOTILLA_TEMPORAL_CACHED_ONLY=1 bash "$script" >/dev/null 2>&1; then
    FLOTILLA_TEMPORAL_BIN="$(FLOTILLA_TEMPORAL_CACHED_ONLY=1 bash "$script")"
    export FLOTILLA_TEMPORAL_BIN
    return
  fi
  if ! command -v go >/dev/null 2>&1 && ! [ -x /usr/local/go/bin/go ]; then
    if [ -n "${CI:-}" ]; then
      log "no Go toolchain to build the Temporal dev server with: in CI the Temporal tests fail without it"
    else
      log "WARNING: no Go toolchain to build the Temporal dev server with; the Temporal tests will be skipped (the summary counts them)"
    fi
    return
  fi
  status="$(mktemp -t flotilla-temporal-status.XXXXXX)"
  : >"$status"
  export FLOTILLA_TEMPORAL_PENDING="$status"
  log "the Temporal dev server is not built yet: building it in the background while the other tests run (the Temporal tests wait for it; its log: $status.log)"
  (
    if bin="$(bash "$script" 2>"$status.log")"; then echo "ok $bin" >"$status.tmp"; else echo "failed $status.log" >"$status.tmp"; fi
    mv -f "$status.tmp" "$status"
  ) &
}

cmd=${1:-setup}
shift || true
ensure_toolchain
ensure_deps
case "$cmd" in
  setup) ;;
  build) bash "$ROOT/tooling/scripts/build.sh" "$@" ;;
  demo)
    bash "$ROOT/tooling/scripts/build.sh"
    (cd "$ROOT" && node apps/demo/dist/main.js "$@") ;;
  dashboard)
    bash "$ROOT/tooling/scripts/build.sh"
    (cd "$ROOT" && node apps/demo/dist/dashboard.js "$@") ;;
  worker)
    bash "$ROOT/tooling/scripts/build.sh"
    (cd "$ROOT" && node apps/worker/dist/main.js "$@") ;;
  bench)
    # The benchmarks run the packages from their sources: those need only their generated Lua.
    (cd "$ROOT" && node tooling/lua/build.mjs >/dev/null && pnpm --silent --filter @flotilla/bench bench "$@") ;;
  example)
    ensure_redis
    (cd "$ROOT" && pnpm --silent --filter @flotilla/examples "$@") ;;
  test)
    ensure_redis
    temporal_in_background
    (cd "$ROOT" && pnpm exec vitest run "$@") ;;
  *) (cd "$ROOT" && "$cmd" "$@") ;;
esac
