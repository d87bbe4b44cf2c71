#!/usr/bin/env bash
# On the device machine, one H200 (issue 25): a full 8-step 832x480x124 `orochi generate` with random
# weights of the released shapes at --precision bf16, fp8 and int8 (same weights, seed and random
# text rows), then PSNR / rel L2 of the decoded frames and of the waveform of fp8 and int8 against
# bf16, with each run's e2e, median step and GPU memory (compare_h3_precision_generate.py).
# Exact outputs: the device build has no FFmpeg, so its MP4 fallback hands a lossless Y4M (8-bit
# 4:4:4) and a 16-bit WAV to $OROCHI_FFMPEG; ffmpeg_capture.py stands in for it and keeps both.
# A floor for "unrelated": one more bf16 run at FLOOR_SEED (other noise and other random text rows,
# the same weights) against the bf16 run. PRECISIONS may name bf16 too: a rerun, expected identical.
# Marked lines: PRECISION_GEN <label> video_psnr_db .. y_psnr_db .. video_rel_l2 .. audio_psnr_db ..
# audio_rel_l2 .. e2e_s .. step_s .. denoise_s .. gpu_denoise_gib used/planned gpu_decode_gib used/planned.
# About 2 minutes on one H200 (4 runs of ~25 s: bench/RESULTS.md's 480p t2va e2e 25.4 s with an MP4).
# Usage (device run, carry .pack): bash scripts/device/run_h3_precision_generate.sh
# Env: WIDTH HEIGHT (832 480) FRAMES (124) STEPS (8) SEED (0) FLOOR_SEED (1; empty: no floor run)
#      PRECISIONS ("fp8 int8") OROCHI (gpu-dist/orochi) GENERATE_ARGS ("--random-weights --device cuda")
#      PYTHON (python3) WORK (/tmp/h3_precision_generate: the outputs, ~150 MB a run)
# CPU check of everything but the GPU (an FFmpeg build writes its own MP4, here at --crf 0, read back
# with PyAV; fp8/int8 are GPU-only, so a bf16 rerun stands in):
#   OROCHI=build/orochi GENERATE_ARGS= WIDTH=320 HEIGHT=192 FRAMES=22 STEPS=2 PRECISIONS=bf16 \
#     PYTHON=/work/venv/bin/python OUT=/tmp/pg_out bash scripts/device/run_h3_precision_generate.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
OROCHI="${OROCHI:-gpu-dist/orochi}"
[ "$OROCHI" != gpu-dist/orochi ] || [ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-/tmp/h3_precision_generate}"
GENERATE_ARGS="${GENERATE_ARGS---random-weights --device cuda}"
FLOOR_SEED="${FLOOR_SEED-1}"
export OROCHI_FFMPEG="$root/scripts/device/ffmpeg_capture.py"  # used only by a build without FFmpeg
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT/logs"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$PYTHON" scripts/device/compare_h3_precision_generate.py --self-test | tail -1 || exit 1
status=0

# One generate into $WORK/<label>/: run.mp4 (or the captured video.y4m + audio.wav) and run.json.
generate() {  # label precision seed
  local label=$1 precision=$2 seed=$3 dir="$WORK/$1" start=$SECONDS
  mkdir -p "$dir"
  if ! FFMPEG_CAPTURE_DIR="$dir" timeout 300 "$OROCHI" generate --quiet $GENERATE_ARGS --precision "$precision" \
      --width "${WIDTH:-832}" --height "${HEIGHT:-480}" --frames "${FRAMES:-124}" --steps "${STEPS:-8}" \
      --seed "$seed" --crf 0 --out "$dir/run.mp4" > "$OUT/logs/$label.log" 2>&1; then
    echo "generate $label (--precision $precision --seed $seed): FAILED"
    tail -5 "$OUT/logs/$label.log"
    status=1
    return 1
  fi
  cp "$dir/run.json" "$OUT/$label.json"
  local kept="" f
  for f in "$dir"/video.y4m "$dir"/audio.wav "$dir"/run.mp4; do
    [ -f "$f" ] && kept+=" ${f##*/} $(( $(stat -c %s "$f") >> 20 )) MiB"
  done
  echo "generate $label (--precision $precision --seed $seed): $((SECONDS - start)) s wall;$kept"
}

generate bf16 bf16 "${SEED:-0}" || exit 1
runs=()
for p in ${PRECISIONS-fp8 int8}; do
  label=$p
  [ "$p" = bf16 ] && label=bf16_rerun
  generate "$label" "$p" "${SEED:-0}" && runs+=("$label=$WORK/$label")
done
if [ -n "$FLOOR_SEED" ]; then
  generate "bf16_seed$FLOOR_SEED" bf16 "$FLOOR_SEED" && runs+=("bf16_seed$FLOOR_SEED=$WORK/bf16_seed$FLOOR_SEED")
fi
"$PYTHON" scripts/device/compare_h3_precision_generate.py --jsonl "$OUT/precision_generate.jsonl" \
  --ref "bf16=$WORK/bf16" "${runs[@]}" || status=1
exit $status
