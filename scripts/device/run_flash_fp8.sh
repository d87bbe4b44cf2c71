#!/usr/bin/env bash
# On the device machine (issue 25, FP8 attention): tests/cuda/test_cuda_flash_attention_fp8 — the
# pre-pass bit-exact vs the CPU, the sm_90a FP8 kernel vs the CPU emulation and exact attention
# (beside the bf16 kernel's error), graph capture, refusals, then the timing against the bf16
# kernel at 32,760 and 106,428 rows x 56 heads. About 1-2 minutes.
# Prints the summary and every marked line (FP8_ATTN_PREPASS, FP8_ATTN, FP8_ATTN_TIME) plus
# failures; the full log goes to $OUT/flash_fp8.log.
# Usage (device run, carry .pack or gpu-dist): bash scripts/device/run_flash_fp8.sh [--no-timing]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
filter='*'
[ "${1:-}" = "--no-timing" ] && filter='-*TimingInformative*'
log="$OUT/flash_fp8.log"
start=$SECONDS
timeout 170 gpu-dist/test_cuda_flash_attention_fp8 --gtest_filter="$filter" > "$log" 2>&1
rc=$?
echo "test_cuda_flash_attention_fp8: exit $rc, $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$log") failed lines, $((SECONDS - start)) s"
grep -hE "^FP8_ATTN|Failure|FAILED  \]|^\[  SKIPPED|error" "$log" | head -120
