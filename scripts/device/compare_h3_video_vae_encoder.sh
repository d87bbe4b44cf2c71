#!/usr/bin/env bash
# On the device machine, in one call: the encoder's GPU op and path tests (every path vs the CPU
# reference), diffusers' video VAE encoder at full size on seeded random weights
# (compare_h3_video_vae_encoder.py writes the vae/ folder, its moments, latents and timings), then our GPU
# encoder on the same weights and inputs (gpu-dist/test_h3_video_vae_encoder_full): rel L2 of moments and
# latents, seconds side by side (124-frame 1344x768 video, 3648x2048 image), peak memory; then every GPU
# path (padded copies, fused NCDHW / NDHWC, autotuned, device tiles) timed side by side with its GPU time
# per stage, and the fastest named.
# Usage (device run, carry .pack .whl, or gpu-dist .whl): bash scripts/device/compare_h3_video_vae_encoder.sh
#   The weights (~0.72 GB) and reference (~50 MB) go to DUMP_DIR (default /tmp/h3_vae_encoder), not $OUT.
#   Env FILTER: a gtest filter for the C++ side (e.g. 'EncoderFull.Matches*' skips the per-path timings).
#   Printed last: the summary lines and the video's stage table of the baseline and the fastest path;
#   the whole log is $OUT/compare_vae_encoder_ours.log.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
DUMP_DIR="${DUMP_DIR:-/tmp/h3_vae_encoder}"
# A carried .pack wins over a gpu-dist/ left on the device by an earlier call (it may be stale).
if [ -f .pack/gpu-dist.tar.xz ]; then rm -rf gpu-dist && tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
[ -x gpu-dist/test_h3_video_vae_encoder_full ] || { echo "no gpu-dist/test_h3_video_vae_encoder_full: carry .pack or gpu-dist"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
echo "== GPU op and path tests (vs the CPU ops and the CPU encoder)"
for t in test_cuda_ops_conv3d test_h3_video_vae_encoder_gpu; do
  timeout 180 "gpu-dist/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
  echo "$t: exit $?, $(grep -cE '^\[  FAILED' "$OUT/$t.log") failed"
  grep -hE "Failure|FAILED  \]" -A3 "$OUT/$t.log" | head -24
done
echo "== diffusers (reference side)"
PYTHONUNBUFFERED=1 python3 scripts/device/compare_h3_video_vae_encoder.py --dir "$DUMP_DIR" \
  2> "$OUT/compare_vae_encoder_py.err" | tee "$OUT/compare_vae_encoder_py.log" || { tail -20 "$OUT/compare_vae_encoder_py.err"; exit 1; }
echo "== orochi GPU encoder on the same weights"
# FILTER (a gtest filter, e.g. 'EncoderFull.Matches*') skips the side-by-side of every path when set.
OROCHI_H3_VAE_ENCODER_FULL="$DUMP_DIR" gpu-dist/test_h3_video_vae_encoder_full ${FILTER:+--gtest_filter="$FILTER"} \
  > "$OUT/compare_vae_encoder_ours.log" 2>&1
code=$?
log="$OUT/compare_vae_encoder_ours.log"
grep -hE "Failure|FAILED  \]" -A3 "$log" | head -30
grep -hE "^\[encoder-(full|path)\]" "$log"
fastest=$(grep -E "^\[encoder-path\] video.*fastest: " "$log" | sed -E 's/.*fastest: ([^,]+),.*/\1/')
echo "== video stages: padded-copies NCDHW${fastest:+ and $fastest}"
for v in "padded-copies NCDHW" ${fastest:+"$fastest"}; do
  grep -F "$(printf '[encoder-stage] video-tf32 | %-34s |' "$v")" "$log"
done
exit "$code"
