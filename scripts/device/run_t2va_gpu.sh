#!/usr/bin/env bash
# On the device machine, in one call: a full-size random-weight MiniMax-H3 t2va run
# (`orochi generate --random-weights --device cuda`, 124 frames, 8 steps) writing an MP4 and its stage
# report, then diffusers' VAE decodes on the same GPU (../shared/bench/peer_h3_prepost.py, copied to
# .peer/), and one table of both.
# Usage (device run, carry gpu-dist .whl .peer): bash scripts/device/run_t2va_gpu.sh [480p] [768p]
# Env: STEPS (default 8), SKIP_PEER=1, GENERATE_ARGS (more generate options, e.g. "--gpus 2").
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# Wheels carried in .whl/: diffusers for the peer, PyAV for the MP4 (the device has no FFmpeg: orochi's
# MP4 fallback then runs scripts/device/ffmpeg_pyav.py as its ffmpeg program).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
command -v ffmpeg >/dev/null || export OROCHI_FFMPEG="$root/scripts/device/ffmpeg_pyav.py"
declare -A canvas=([480p]="832 480" [768p]="1344 768")
mkdir -p /tmp/t2va
for res in "${@:-480p}"; do
  read -r w h <<< "${canvas[$res]}"
  echo "== orochi generate $res (${w}x${h}, 124 frames, ${STEPS:-8} steps, random weights)"
  gpu-dist/orochi generate --quiet --random-weights --device cuda --width "$w" --height "$h" --frames 124 \
    --steps "${STEPS:-8}" --out "/tmp/t2va/t2va_$res.mp4" ${GENERATE_ARGS:-} 2> "$OUT/generate_$res.err" | tee "$OUT/generate_$res.txt"
  cp "/tmp/t2va/t2va_$res.json" "$OUT/" 2>/dev/null  # the MP4 itself stays: random frames encode large
  tail -4 "$OUT/generate_$res.err"
  python3 -c "import av, sys; c = av.open(sys.argv[1]); print([(s.type, s.codec_context.name, s.frames,
    float(s.duration * s.time_base) if s.duration else None) for s in c.streams])" "/tmp/t2va/t2va_$res.mp4"
  ls -la "/tmp/t2va/t2va_$res.mp4"
done
if [ "${SKIP_PEER:-0}" != 1 ]; then
  echo "== diffusers VAE decodes (peer_h3_prepost.py)"
  for res in "${@:-480p}"; do
    OUT="$OUT" PYTHONUNBUFFERED=1 python3 .peer/peer_h3_prepost.py --res "$res" --skip text \
      > "$OUT/prepost_$res.log" 2>&1 || tail -20 "$OUT/prepost_$res.log"
    tail -1 "$OUT/prepost_$res.log"
  done
fi
