#!/usr/bin/env bash
# Configures and builds Orochi into build/ (or $OROCHI_BUILD_DIR). The CUDA backend is compiled
# whenever the CUDA toolkit is present, so CI (no GPU) still proves it compiles.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${OROCHI_BUILD_DIR:-$root/build}"
"$root/scripts/install_deps.sh"
cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=ON
  export PATH="$PATH:/usr/local/cuda/bin"
fi
cuda="${OROCHI_CUDA:-$cuda}"
cfe_include="$(ls -d "$root"/.deps/cudnn_frontend-*/include 2>/dev/null | tail -n 1 || true)"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOROCHI_CUDA="$cuda" \
    -DOROCHI_CUDNN_FRONTEND_INCLUDE="$cfe_include" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
