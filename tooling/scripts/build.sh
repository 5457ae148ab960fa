#!/usr/bin/env bash
# Builds the workspace with turbo and shows its progress: a line per package as its build starts (or
# is replayed from turbo's cache), and whatever a build prints beyond pnpm's banners (a compiler's
# errors, in full). Expects node and pnpm on the PATH (tooling/scripts/flotilla.sh provides them).
#   build.sh [turbo run options…]    e.g. build.sh --filter=@flotilla/worker-app...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
printf '\033[2m[flotilla]\033[0m %s\n' "building the workspace with turbo, a line per package (usually under a minute the first time, seconds once cached)" >&2
color=()
if [[ -t 2 ]]; then color=(--color); fi
# new-only: a build that ran prints its output, a cached one a single line. pnpm's banner around
# each build ("> @flotilla/core@0.0.0 build /path", "> tsc -p …") and blank lines are dropped.
pnpm exec turbo run build --output-logs=new-only ${color[@]+"${color[@]}"} "$@" 2>&1 |
  awk '!/^[^ ]+:[a-z-]+: *(> .*)?$/ { print; fflush() }' >&2
