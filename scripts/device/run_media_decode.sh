#!/usr/bin/env bash
# On the device machine (issue 23's preprocessing goal, CPU part): the ref2va benchmark's media decode
# (4 PPM pictures at the 2048 rule and at match, a 5 s 1280x720 Y4M with its WAV, a WAV clip, for an
# 832x480x124 target) through the engine's reader on 1, 2 and every core, bytes compared; prints
# MEDIA_DECODE lines. No GPU work; takes ~1 minute with the media made here.
# Usage (device run, carry gpu-dist or .pack): bash scripts/device/run_media_decode.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pack=$(ls .pack/gpu-dist.tar.xz 2>/dev/null | head -1)
if [ ! -x gpu-dist/orochi ] && [ -n "$pack" ]; then tar xJf "$pack" || exit 1; fi
media=/tmp/ref2va_media
[ -f "$media/voice.wav" ] || python3 scripts/device/make_ref2va_media.py "$media" || { echo "MEDIA_DECODE media: failed (numpy?)"; exit 1; }
nproc | sed 's/^/cores: /'
OROCHI_REF2VA_MEDIA="$media" gpu-dist/test_media_decode_device 2>&1 | tee "$OUT/media_decode.txt" | grep -E "MEDIA_DECODE|Failure|differs|OK|FAILED"
