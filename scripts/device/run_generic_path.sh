#!/usr/bin/env bash
# On the device machine, one H200 (issue 25, builds for consumer GPUs): the generic path (what an
# A100 / RTX 3090 / A6000 / 4090 runs: cuDNN attention, cuBLASLt GEMMs; engine/gpu_capability.h)
# forced with --set kernels=generic, checked and timed beside the default Hopper path.
#  1. test_generic_path_gpu: narrow-model forward, generic vs Hopper (bf16, int8), rel L2 <= 1e-2;
#     bench dit's report says attention "cudnn" under kernels=generic.
#  2. `orochi bench dit --res 480p` (50 layers, random weights), default vs --set kernels=generic.
# Marked lines: GENERIC_PATH (the test's comparisons), GENERIC_TIME (median forward of each path and
# the attention kernel its report names). About 1-1.5 minutes (WARMUP=1 ITERS=3 by default).
# Usage (device run, carry .pack): bash scripts/device/run_generic_path.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
mkdir -p "$OUT/logs"
status=0
timeout 240 gpu-dist/test_generic_path_gpu > "$OUT/logs/test_generic_path_gpu.log" 2>&1 || status=1
echo "test_generic_path_gpu: exit $status, $(grep -cE '^\[  FAILED' "$OUT/logs/test_generic_path_gpu.log") failed"
grep -hE "^GENERIC_PATH|Failure|FAILED  \]|SKIPPED" "$OUT/logs/test_generic_path_gpu.log" | head -20

for variant in default kernels=generic; do
  args=()
  [ "$variant" = default ] || args=(--set "$variant")
  if timeout 150 gpu-dist/orochi bench dit --res 480p --warmup "${WARMUP:-1}" --iters "${ITERS:-3}" --json "${args[@]}" \
      > "$OUT/logs/bench_$variant.json" 2> "$OUT/logs/bench_$variant.err"; then
    python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print("GENERIC_TIME %-16s forward_s_median %.3f attention %s" % (sys.argv[2], j["forward_s_median"], j["attention"]))' \
      "$OUT/logs/bench_$variant.json" "$variant"
  else
    echo "GENERIC_TIME $variant FAILED"; tail -5 "$OUT/logs/bench_$variant.err"; status=1
  fi
done
exit $status
