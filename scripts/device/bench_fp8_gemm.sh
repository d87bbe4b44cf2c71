#!/usr/bin/env bash
# On the device machine (issue 25): the quantization and quantized-GEMM GPU tests, then the
# low-precision GEMM benchmark (tests/cuda/test_cuda_bench_gemm.cpp's opt-in test): H3's block
# linears at 480p and 768p, bf16 vs fp8 (outer-vector scales, fast accumulation, unit scales +
# epilogue) vs int8, median ms, TFLOP/s, rel L2 to bf16 and to f32. About a minute in all.
# Prints the tests' summary and every marked line; full logs in $OUT/fp8_gemm.tar.gz.
# Usage (device run, carry gpu-dist or .pack): bash scripts/device/bench_fp8_gemm.sh [--bench-only]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
mkdir -p "$OUT/logs"
if [ "${1:-}" != "--bench-only" ]; then
  for t in test_cuda_quantize test_cuda_gemm_quantized; do
    start=$SECONDS
    timeout 240 "gpu-dist/$t" > "$OUT/logs/$t.log" 2>&1
    echo "$t: exit $?, $(grep -cE '^\[  FAILED' "$OUT/logs/$t.log") failed, $((SECONDS - start)) s"
    grep -hE "^\[cuda-op\]|Failure|FAILED  \]" "$OUT/logs/$t.log" | head -60
  done
fi
start=$SECONDS
timeout 180 gpu-dist/test_cuda_bench_gemm --gtest_also_run_disabled_tests --gtest_filter='BenchGemm.*' \
  > "$OUT/logs/bench_gemm.log" 2>&1
echo "test_cuda_bench_gemm: exit $?, $((SECONDS - start)) s"
grep -hE "^\[bench-gemm|Failure|FAILED  \]" "$OUT/logs/bench_gemm.log"
tar czf "$OUT/fp8_gemm.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
