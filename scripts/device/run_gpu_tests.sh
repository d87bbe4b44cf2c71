#!/usr/bin/env bash
# On the device machine: every GPU test executable in gpu-dist/ (each under a time limit, so one
# that hangs cannot eat the call), one summary line each plus its failures and marked lines, the
# logs packed into $OUT/gpu_tests.tar.gz.
# Usage (device run, carry .pack): bash scripts/device/run_gpu_tests.sh [TEST_NAME...]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=($(cd gpu-dist && ls test_*))
mkdir -p "$OUT/logs"
for name in "${tests[@]}"; do
  start=$SECONDS
  timeout "${TEST_TIMEOUT:-300}" "gpu-dist/$name" --gtest_brief=1 > "$OUT/logs/$name.log" 2>&1
  code=$?
  echo "$name: exit $code, $(grep -cE '^\[  FAILED' "$OUT/logs/$name.log") failed, $((SECONDS - start)) s"
  grep -hE "^\[engine-gpu\]|Failure|FAILED  \]" "$OUT/logs/$name.log" | head -12
done
tar czf "$OUT/gpu_tests.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
