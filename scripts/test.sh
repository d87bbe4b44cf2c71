#!/usr/bin/env bash
# Builds Orochi and runs every test (CPU; no GPU, no Python needed).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
cd "${OROCHI_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)"
