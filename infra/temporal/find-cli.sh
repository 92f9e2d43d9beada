#!/usr/bin/env bash
# Prints the path of a Temporal CLI binary (dev server + Web UI in one binary).
# Order: $TEMPORAL_CLI; `temporal` on PATH; a cached build under the user cache directory; otherwise build it
# once with `go install` into that cache. Progress goes to stderr; only the path goes to stdout.
set -euo pipefail

version="${TEMPORAL_CLI_VERSION:-v1.5.1}"
cache_root="${DURABLE_CONTEXT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/durable-context}"
cache_dir="$cache_root/temporal-$version"
cached="$cache_dir/temporal"

if [[ -n "${TEMPORAL_CLI:-}" ]]; then
  if [[ -x "$TEMPORAL_CLI" ]]; then echo "$TEMPORAL_CLI"; exit 0; fi
  echo "TEMPORAL_CLI is set to '$TEMPORAL_CLI', which is not an executable file." >&2
  exit 1
fi

if on_path="$(command -v temporal 2>/dev/null)"; then echo "$on_path"; exit 0; fi

if [[ -x "$cached" ]]; then echo "$cached"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  cat >&2 <<MSG
No Temporal CLI found. Install one of:
  - Go 1.24+ and re-run this script (it builds github.com/temporalio/cli/cmd/temporal@$version into $cache_dir), or
  - the Temporal CLI from https://docs.temporal.io/cli (put 'temporal' on PATH), or
  - set TEMPORAL_CLI=/path/to/temporal.
MSG
  exit 1
fi

echo "Building the Temporal CLI $version into $cache_dir (first run only; takes several minutes)..." >&2
mkdir -p "$cache_dir"
tmp_bin="$(mktemp -d "$cache_dir/.build.XXXXXX")"
trap 'rm -rf "$tmp_bin"' EXIT
if ! GOBIN="$tmp_bin" GOFLAGS="${GOFLAGS:-} -trimpath" go install "github.com/temporalio/cli/cmd/temporal@$version" >&2; then
  echo "go install github.com/temporalio/cli/cmd/temporal@$version failed (see above). Set TEMPORAL_CLI to an existing binary." >&2
  exit 1
fi
mv "$tmp_bin/temporal" "$cached"
echo "$cached"
