#!/usr/bin/env bash
# On the device machine: the Qwen3-VL text encoder's mixed-sequence path (issue 22 part B).
#   1. test_qwen3vl_gpu_mixed: a text + 2 images + 1 video sequence (features at the pad rows,
#      M-RoPE positions, DeepStack after layers 0..2) vs the CPU and transformers (tiny model), and
#      a 36,864-token presentation-sized sequence through the same attention path;
#      test_qwen3vl_gpu and test_qwen3vl_gpu_streaming: the text-only path, unchanged.
#   2. The full-size stack (random weights, real shapes) at ref2va lengths: 1000, 8192 and 36,864
#      tokens over 4 layers, so the 32B shapes' attention (64 q / 8 kv heads of 128) and activation
#      arena are shown to hold a 36k presentation; time and memory per length.
# Usage (device run, carry .pack): bash scripts/device/run_qwen3vl_mixed.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for t in test_qwen3vl_gpu_mixed test_qwen3vl_gpu test_qwen3vl_gpu_streaming; do
  timeout 600 "gpu-dist/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
  echo "$t: exit $?, $(grep -cE '^\[  FAILED' "$OUT/$t.log") failed"
  grep -hE "vs |rows|Failure|FAILED  \]" "$OUT/$t.log" | head -12
done
for tokens in 1000 8192 36864; do
  echo "--- bench text --tokens $tokens --layers 4"
  timeout 600 gpu-dist/orochi bench text --tokens "$tokens" --layers 4 --warmup 1 --iters 3 2>&1 | tail -8
done
