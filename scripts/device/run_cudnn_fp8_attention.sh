#!/usr/bin/env bash
# On the device machine, one H200 (issue 25, FP8 attention): cuDNN's FP8 fused attention
# (backends/cuda/attention_cudnn_fp8.h), the comparison for our own FP8 flash kernel.
#  1. test_cuda_quantize_tensor: the per-tensor quantize kernels vs their CPU twin, bit for bit.
#  2. test_cuda_attention_cudnn_fp8: accuracy vs the exact f32 CPU attention at 56 heads x 128
#     (S = 32,760 and 32,768, a key-bias case, S_q != S_kv) beside cuDNN bf16 and our bf16 flash
#     kernel, with and without K smoothing; timing at S = 32,760 / 32,768 / 37,966 / 106,428
#     (median of 5, CUDA events).
# Marked lines: CUDNN_FP8_ATTN (accuracy, the plan cuDNN chose, or "unsupported: <why, versions>"),
# CUDNN_FP8_ATTN_TIME (timing). About a minute.
# Usage (device run, carry .pack): bash scripts/device/run_cudnn_fp8_attention.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
mkdir -p "$OUT/logs"
status=0
for t in test_cuda_quantize_tensor test_cuda_attention_cudnn_fp8; do
  log="$OUT/logs/$t.log"
  if [ ! -x "gpu-dist/$t" ]; then
    echo "$t: missing from gpu-dist (rebuild with scripts/device/build_gpu.sh)"; status=1; continue
  fi
  timeout 150 "gpu-dist/$t" > "$log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "$t: exit $rc, $(grep -cE '^\[  FAILED' "$log") failed, $(grep -cE '^\[  SKIPPED' "$log") skipped"
  grep -hE "^CUDNN_FP8_ATTN|^\[cuda-op\]|Failure|FAILED  \]|SKIPPED \]" "$log" | head -40
done
exit $status
