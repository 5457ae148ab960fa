#!/usr/bin/env bash
# Makes sure the Temporal dev server (the `temporal` CLI) is built, once, into a cache folder outside
# the clone, and prints its path. Built from the Go module proxy with the machine's Go.
#   FLOTILLA_CACHE        cache root (default ~/.cache/flotilla)
#   FLOTILLA_TEMPORAL_BIN use this binary instead
#   FLOTILLA_PROGRESS_SECONDS  how often a long step says it is still running (default 30)
#   FLOTILLA_TEMPORAL_CACHED_ONLY=1  print the cached binary, or exit 1 without building
# Two runs at once build once: the second waits for the first (a lock beside the cache folder).
# Progress goes to stderr (stdout is the binary's path): what it does, each step, and a line every
# FLOTILLA_PROGRESS_SECONDS while a step runs, so the one slow build never looks like a hang.
set -euo pipefail
VERSION="v1.5.1" # github.com/temporalio/cli; later versions need a module the proxy does not serve
if [[ -n "${FLOTILLA_TEMPORAL_BIN:-}" ]]; then
  echo "$FLOTILLA_TEMPORAL_BIN"
  exit 0
fi
CACHE="${FLOTILLA_CACHE:-$HOME/.cache/flotilla}/temporal/$VERSION"
BIN="$CACHE/temporal"
if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
# FLOTILLA_TEMPORAL_CACHED_ONLY=1: only say whether it is built (exit 1 when not), never build.
if [[ -n "${FLOTILLA_TEMPORAL_CACHED_ONLY:-}" ]]; then exit 1; fi
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "temporal.sh: no Go toolchain to build the Temporal dev server with" >&2
  exit 1
fi
mkdir -p "$CACHE"
EVERY="${FLOTILLA_PROGRESS_SECONDS:-30}"
START=$(date +%s)
elapsed() {
  local s=$(($(date +%s) - START))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}
# Runs a command while a background loop says "still <what>" every $EVERY seconds. The loop writes
# to stderr only, so a command substitution around this never waits for it, and it ends by itself
# should this script be killed ($$ is this script's pid, in subshells too).
ticking() {
  local what="$1"
  shift
  (
    nap=""
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    while kill -0 $$ 2>/dev/null; do
      sleep "$EVERY" &
      nap=$!
      wait "$nap"
      if kill -0 $$ 2>/dev/null; then echo "temporal.sh: still $what… ($(elapsed) so far)" >&2; fi
    done
  ) >&2 &
  local ticker=$!
  local rc=0
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}
# One build at a time on a machine: a run that finds another building (two clones' CI, or CI's
# background build and the test command's) waits for it and takes its binary instead of building the
# same thing again on the same cores. The lock is a file beside the cache folder, held until exit.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE.lock"
  if ! flock -n 9; then
    echo "temporal.sh: another run is building the Temporal dev server; waiting for it…" >&2
    ticking "waiting for the other build" flock 9
    if [[ -x "$BIN" ]]; then
      echo "temporal.sh: the other run built it: $BIN" >&2
      echo "$BIN"
      exit 0
    fi
  fi
fi
echo "temporal.sh: building the Temporal dev server (the temporal CLI $VERSION) for the Temporal tests, once: it is cached in $CACHE." >&2
echo "temporal.sh: this usually takes 3–10 minutes (a download of its Go modules, then a compile); later runs reuse the binary." >&2
# Two runs at once (two clones' CI) each build into a folder of their own inside the cache folder and
# rename the binary into place: the rename stays on one file system, so it is atomic and the cache
# never holds a half-written binary; a failed or interrupted build leaves nothing behind.
WORK="$(mktemp -d)"
STAGE="$(mktemp -d "$CACHE/.build.XXXXXX")"
trap 'rm -rf "$WORK" "$STAGE"' EXIT
echo "temporal.sh: 1/2 downloading github.com/temporalio/cli@$VERSION and its modules from the Go module proxy…" >&2
DIR="$(cd "$WORK" && ticking "downloading" env GOFLAGS=-mod=mod go mod download -json "github.com/temporalio/cli@$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
echo "temporal.sh: 2/2 compiling ./cmd/temporal (the long step)…" >&2
(cd "$DIR" && ticking "compiling" go build -o "$STAGE/temporal" ./cmd/temporal)
mv -f "$STAGE/temporal" "$BIN"
echo "temporal.sh: built in $(elapsed): $BIN" >&2
echo "$BIN"
