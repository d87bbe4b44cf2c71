#!/usr/bin/env bash
# On the device machine: the Qwen3-VL vision tower's GPU test alone (tests/cuda/test_qwen3vl_vision_gpu.cpp):
# each new CUDA op vs its CPU step ("[cuda-op]" lines), the tiny golden tower vs the CPU fp32 reference and
# transformers' bf16 run, and the released shapes with random weights (56 patches vs the CPU; a 1344x768
# keyframe + an 11-frame video, 28224 patches, timed: "[vision-tower]" lines). Log in $OUT/qwen3vl_vision_gpu.log.
# Usage (carry .pack, or gpu-dist, built by scripts/device/build_gpu.sh): bash scripts/device/run_qwen3vl_vision_gpu.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
if [ -f .pack/gpu-dist.tar.xz ] && [ ! -x gpu-dist/test_qwen3vl_vision_gpu ]; then tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
gpu-dist/test_qwen3vl_vision_gpu 2>&1 | tee "$OUT/qwen3vl_vision_gpu.log"
status=${PIPESTATUS[0]}
echo "== summary"
grep -E "^\[cuda-op\]|^\[vision-tower\]|vs CPU|vs transformers|PASSED|FAILED" "$OUT/qwen3vl_vision_gpu.log"
exit "$status"
