#!/usr/bin/env bash
# On the device machine (issue 23's device check): ref2va with random weights of the released shapes
# on one GPU (`orochi generate --random-weights --device cuda`: the denoiser, both VAE encoders and both
# decoders generated on the GPU; the random text rows take the presentation's length). The references
# are made here (scripts/device/make_ref2va_media.py: uncompressed, which the FFmpeg-less device build
# reads): 4 pictures (3648x2048, 2048x2048, 2048x2720, 3072x2048 at the 2048 rule), a 5 s 1280x720
# 30 fps video with its 48 kHz stereo soundtrack, a 4 s mono clip. Each variant prints `orochi plan`,
# runs generate writing an MP4 (video + audio streams checked with PyAV) and prints the stage report
# and one REF2VA line: load, pre (media decode, VAE encode, text), per step, post, e2e, S, peak GPU.
# Variants (arguments, default all three; each fits one 10-minute call):
#   480p        832x480x124, 8 steps, --ref-size 2048 (S ~ 99k rows: ~31 s a step planned)
#   480p-match  the same with --ref-size match
#   768p        1344x768x124, --ref-size 2048, 2 steps (the per-step time; STEPS overrides)
# Usage (device run, carry gpu-dist or .pack, .whl-av): bash scripts/device/run_ref2va_gpu.sh [480p] [480p-match] [768p]
# Env: STEPS (every variant's steps), GENERATE_ARGS (more generate options), OMP_NUM_THREADS (the media
# decode's threads; default every core). The pre parts: media decode (CPU: file reads, Y4M colours,
# LANCZOS resizes), vision inputs (with a prompt), VAE encode, text; with --gpus N >= 2 and a prompt
# the VAE encode and the conditioner run at once (the pair's wall time is printed too).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pack=$(ls .pack/gpu-dist.tar.xz 2>/dev/null | head -1)
if [ ! -x gpu-dist/orochi ] && [ -n "$pack" ]; then tar xJf "$pack" || exit 1; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# PyAV for the MP4 (the device has no FFmpeg: orochi's MP4 fallback runs scripts/device/ffmpeg_pyav.py).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  $(ls .whl-av/*.whl .whl/av-*.whl 2>/dev/null) && export PYTHONPATH=/tmp/site
command -v ffmpeg >/dev/null || export OROCHI_FFMPEG="$root/scripts/device/ffmpeg_pyav.py"
media=/tmp/ref2va_media
[ -f "$media/voice.wav" ] || python3 scripts/device/make_ref2va_media.py "$media" || { echo "REF2VA media: failed (numpy?)"; exit 1; }
refs="--ref-image $media/wide.ppm --ref-image $media/square.ppm --ref-image $media/tall.ppm --ref-image $media/landscape.ppm
      --ref-video $media/clip.y4m --ref-audio $media/voice.wav"
mkdir -p /tmp/ref2va
for variant in "${@:-480p 480p-match 768p}"; do
  for v in $variant; do
    case "$v" in
      480p) size="832 480" steps="${STEPS:-8}" extra="" ;;
      480p-match) size="832 480" steps="${STEPS:-8}" extra="--ref-size match" ;;
      768p) size="1344 768" steps="${STEPS:-2}" extra="" ;;
      *) echo "unknown variant $v (480p, 480p-match, 768p)"; exit 2 ;;
    esac
    read -r w h <<< "$size"
    echo "== $v: orochi plan ${w}x${h}x124, $steps steps $extra"
    gpu-dist/orochi plan --res "${w}x${h}" --frames 124 --steps "$steps" $refs $extra 2>&1 | tee "$OUT/plan_$v.txt" \
      | grep -E "^ +[0-9] |conditioner|packed sequence|phase [0-9]|GPU 0|summary|per step"
    echo "== $v: orochi generate --random-weights"
    gpu-dist/orochi generate --random-weights --device cuda --width "$w" --height "$h" --frames 124 --steps "$steps" \
      $refs $extra --out "/tmp/ref2va/$v.mp4" ${GENERATE_ARGS:-} 2> "$OUT/generate_$v.err" | tee "$OUT/generate_$v.txt"
    rc=${PIPESTATUS[0]}
    grep -E "reference|VAE encoders|random text rows|error" "$OUT/generate_$v.err" | tail -8
    cp "/tmp/ref2va/$v.json" "$OUT/" 2>/dev/null
    [ "$rc" = 0 ] || { echo "REF2VA $v: generate failed (exit $rc)"; tail -20 "$OUT/generate_$v.err"; continue; }
    python3 - "/tmp/ref2va/$v.json" "/tmp/ref2va/$v.mp4" "$v" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, pre = r["stages_s"], r["stages_s"]["pre_detail"]
gpus = r["peak_memory"]["gpus"]
used = max((v for g in gpus for k, v in g.items() if k.startswith("used_bytes")), default=0) / 2**30
streams = "?"
try:
    import av
    with av.open(sys.argv[2]) as c:
        streams = ",".join(f"{st.type}:{st.codec_context.name}:{st.frames}" for st in c.streams)
except Exception as e:  # PyAV missing or the file unreadable: say so
    streams = f"unchecked ({e})"
at_once = pre.get("vae_encode_and_text_at_once")
pair = f", VAE encode + text at once {at_once:.2f}" if at_once is not None else ""
print(f"REF2VA {sys.argv[3]}: {r['request']['width']}x{r['request']['height']}x{r['request']['frames']} "
      f"{r['request']['steps']} steps, S={r['sizes']['packed_rows']} (text {r['sizes']['rows']['text']}) | "
      f"load {s['load']:.2f} s, pre {s['pre']:.2f} s (media decode {pre['media_decode']:.2f}, vision inputs "
      f"{pre.get('vision_inputs', 0):.2f}, VAE encode {pre['vae_encode']:.2f}, text {pre['text_features']:.2f}"
      f"{pair}, tables {pre['layout_noise_tables']:.2f}), "
      f"per step {s['per_step']['median']:.2f} s, post {s['post']:.2f} s, e2e {s['e2e']:.2f} s | "
      f"GPU in use at most {used:.1f} GiB (end of denoise / decode / run) | mp4 {streams}")
PY
  done
done
