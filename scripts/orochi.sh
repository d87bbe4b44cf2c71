#!/usr/bin/env bash
# Builds Orochi if needed, then runs `orochi` with the given arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh" >&2
exec "${OROCHI_BUILD_DIR:-$root/build}/orochi" "$@"
