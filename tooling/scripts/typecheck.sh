#!/usr/bin/env bash
# Typechecks the workspace in four programs at once: the workspace as one (tsconfig.workspace.json:
# every package's sources and tests, each file checked once), and the three whose compiler options
# differ (the dashboard's browser code, @flotilla/testing's isolatedDeclarations, tooling/). Per
# package, with turbo, the same checks took minutes: each package checked again every workspace
# package it imports from source. `pnpm typecheck:packages` still runs them one package at a time.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
node tooling/lua/build.mjs >/dev/null
configs=(tsconfig.workspace.json apps/dashboard/tsconfig.json packages/testing/tsconfig.json tooling/tsconfig.json)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pids=()
for i in "${!configs[@]}"; do
  pnpm exec tsc -p "${configs[$i]}" >"$out/$i" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!configs[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed=1
    echo "typecheck: ${configs[$i]} has errors:" >&2
    cat "$out/$i" >&2
  fi
done
exit "$failed"
