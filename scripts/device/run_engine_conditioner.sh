#!/usr/bin/env bash
# On the device machine: the engine's GPU conditioning of presentations with pictures (issue 23).
#   test_engine_conditioner_gpu: GpuBackend::encode_presentation (bf16 vision tower, then the bf16
#   mixed text stack) vs pipeline::encode_conditioner_inputs_cpu (fp32) on the tiny Qwen3-VL of
#   tests/data/h3_fl2va_prompt, for an fl2va (2 keyframes) and a ref2va (2 images, a 2-block video,
#   an audio label) presentation, rel L2 <= 2e-2; a streamed text layer vs all resident (<= 1e-6);
#   and the engine on the GPU over the tiny checkpoint (fl2va with --prompt): features vs the CPU
#   engine's (<= 2e-2) and a run that gives 124 frames; ref2va likewise (transformer_ref/ read on the GPU
#   engine), then t2va on the same engine. Seconds.
# Usage (device run, carry gpu-dist): bash scripts/device/run_engine_conditioner.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
t=test_engine_conditioner_gpu
timeout 300 "gpu-dist/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
echo "$t: exit $?, $(grep -cE '^\[  FAILED' "$OUT/$t.log") failed"
grep -hE "ENGINE_CONDITIONER|Failure|FAILED  \]" "$OUT/$t.log" | head -20
