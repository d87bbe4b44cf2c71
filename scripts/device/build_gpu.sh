#!/usr/bin/env bash
# Builds the GPU flavour on the dev machine for the H200 (sm_90), without FFmpeg (the device
# machine has no FFmpeg libraries), and stages what a device run needs into gpu-dist/ (ignored,
# carried with `carry: ["gpu-dist"]`).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/scripts/install_deps.sh"
build="$root/build-gpu"
cfe_include="$(ls -d "$root"/.deps/cudnn_frontend-*/include | tail -n 1)"
if [ ! -f "$build/build.ninja" ]; then
  PATH="$PATH:/usr/local/cuda/bin" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DOROCHI_CUDA=ON -DOROCHI_FFMPEG=OFF -DOROCHI_CUDNN_FRONTEND_INCLUDE="$cfe_include" >/dev/null
fi
# The binary and every GPU test (tests/cuda/test_*.cpp).
gpu_tests=$(cd "$root/tests/cuda" && ls test_*.cpp | sed 's/\.cpp$//')
cmake --build "$build" -j "$(nproc)" --target orochi $gpu_tests
dist="$root/gpu-dist"
rm -rf "$dist" && mkdir -p "$dist"
cp "$build/orochi" "$dist/"
for t in $gpu_tests; do cp "$build/tests/$t" "$dist/"; done
strip --strip-debug "$dist"/* 2>/dev/null || true
# Shared libraries the device machine lacks (cpp-httplib for `orochi serve`, and its brotli), beside
# the binaries; device_env.sh puts gpu-dist/lib on LD_LIBRARY_PATH.
mkdir -p "$dist/lib"
ldd "$dist/orochi" | awk '/libcpp-httplib|libbrotli/ {print $3}' | xargs -r cp -L -t "$dist/lib"
du -sh "$dist"
