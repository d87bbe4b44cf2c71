#!/usr/bin/env bash
# On the device machine, in one call: diffusers' video VAE encoder at full size on seeded random weights
# (compare_h3_video_vae_encoder.py writes the vae/ folder, its moments, latents and timings), then our GPU encoder
# on the same weights and inputs (gpu-dist/test_h3_video_vae_encoder_full): rel L2 of moments and latents, seconds
# side by side (124-frame 1344x768 video, 3648x2048 image), peak memory.
# Usage (device run, carry gpu-dist .whl): bash scripts/device/compare_h3_video_vae_encoder.sh
#   The weights (~0.72 GB) and reference (~50 MB) go to DUMP_DIR (default /tmp/h3_vae_encoder), not $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
DUMP_DIR="${DUMP_DIR:-/tmp/h3_vae_encoder}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
echo "== diffusers (reference side)"
PYTHONUNBUFFERED=1 python3 scripts/device/compare_h3_video_vae_encoder.py --dir "$DUMP_DIR" \
  2> "$OUT/compare_vae_encoder_py.err" | tee "$OUT/compare_vae_encoder_py.log" || { tail -20 "$OUT/compare_vae_encoder_py.err"; exit 1; }
echo "== orochi GPU encoder on the same weights"
OROCHI_H3_VAE_ENCODER_FULL="$DUMP_DIR" gpu-dist/test_h3_video_vae_encoder_full 2>&1 | tee "$OUT/compare_vae_encoder_ours.log"
exit "${PIPESTATUS[0]}"
