#!/usr/bin/env bash
# On the device machine (issue 23, "each part's time and diffusers' time for the same part"): diffusers 0.42.1's
# ref2va preprocessing of run_ref2va_gpu.sh's request (832x480x124; 4 pictures at the 2048 rule, a 5 s 1280x720
# 30 fps video with its 48 kHz soundtrack, a 4 s clip), timed part by part with random weights of the released
# shapes on the GPU (peer_ref2va_preprocess.py: media decode + normalize, video VAE, audio VAE, Qwen3-VL processor,
# vision tower, the 50-layer text stack, and the 64-layer stack the pipeline runs as shipped). The media are
# make_ref2va_media.py's, in the same folder run_ref2va_gpu.sh uses (/tmp/ref2va_media: made here if absent).
# Our side is run_ref2va_gpu.sh's stage report (media decode, VAE encode, text).
# Usage (device run, carry .whl, and .whl-av for the pipeline's own PyAV decode of the Y4M/WAVs; without PyAV the
# frames and waveforms are read by numpy, which leaves PyAV's demux and conversion out of "decode"):
#   bash scripts/device/peer_ref2va_preprocess.sh
# Env: ITERS (timed requests after one warm-up, default 2), PY_ARGS (more peer_ref2va_preprocess.py options, e.g.
#   --no-shipped-depth, --decoder numpy), MEDIA (the media folder). ~3 minutes.
# Results: PEER_PREP <part> <seconds> lines (medians), $OUT/peer_ref2va_preprocess.{log,json}.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
# The diffusers wheel (and PyAV when carried), as compare_h3_full.sh / run_ref2va_gpu.sh install them.
shopt -s nullglob
wheels=(.whl/*.whl .whl-av/*.whl)
shopt -u nullglob
[ -n "$(ls .whl/diffusers-*.whl 2>/dev/null)" ] || { echo "no .whl/diffusers-*.whl: carry .whl"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}" \
  && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
media="${MEDIA:-/tmp/ref2va_media}"
[ -f "$media/voice.wav" ] || python3 scripts/device/make_ref2va_media.py "$media" || { echo "PEER_PREP media: failed"; exit 1; }
t0=$SECONDS
# shellcheck disable=SC2086  # PY_ARGS is a list of arguments
PYTHONUNBUFFERED=1 OUT="$OUT" python3 scripts/device/peer_ref2va_preprocess.py --media "$media" --iters "${ITERS:-2}" \
  ${PY_ARGS:-} > "$OUT/peer_ref2va_preprocess.log" 2> "$OUT/peer_ref2va_preprocess.err"
status=$?
grep -E "^PEER_PREP" "$OUT/peer_ref2va_preprocess.log"
grep -E "^\[peer_ref2va_preprocess\]|Error|error" "$OUT/peer_ref2va_preprocess.err" | tail -8
[ $status -eq 0 ] || { echo "peer_ref2va_preprocess.py failed (exit $status)"; tail -20 "$OUT/peer_ref2va_preprocess.err"; }
echo "== peer side took $((SECONDS - t0)) s"
exit $status
