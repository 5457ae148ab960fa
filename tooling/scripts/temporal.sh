#!/usr/bin/env bash
# Makes sure the Temporal dev server (the `temporal` CLI) is built, once, into a cache folder outside
# the clone, and prints its path. Built from the Go module proxy with the machine's Go.
#   FLOTILLA_CACHE        cache root (default ~/.cache/flotilla)
#   FLOTILLA_TEMPORAL_BIN use this binary instead
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
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "temporal.sh: no Go toolchain to build the Temporal dev server with" >&2
  exit 1
fi
mkdir -p "$CACHE"
echo "temporal.sh: building the Temporal dev server $VERSION (once; cached in $CACHE)…" >&2
# Two runs at once (two clones' CI) each build into a folder of their own inside the cache folder and
# rename the binary into place: the rename stays on one file system, so it is atomic and the cache
# never holds a half-written binary; a failed or interrupted build leaves nothing behind.
WORK="$(mktemp -d)"
STAGE="$(mktemp -d "$CACHE/.build.XXXXXX")"
trap 'rm -rf "$WORK" "$STAGE"' EXIT
DIR="$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "github.com/temporalio/cli@$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
(cd "$DIR" && go build -o "$STAGE/temporal" ./cmd/temporal)
mv -f "$STAGE/temporal" "$BIN"
echo "$BIN"
