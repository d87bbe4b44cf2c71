#!/usr/bin/env bash
# Makes the demo's reference media with the ffmpeg command-line tool (installed by
# scripts/install_deps.sh): two keyframes for fl2va (first.png: a test card, last.png: a colour
# gradient) and, for ref2va, a portrait reference picture (ref.png: a Mandelbrot set, 192x256), a
# 2 s 320x192 clip with a 440 Hz soundtrack and a 2 s WAV.
# Usage: bash scripts/make_demo_media.sh [DIR]   (default: demo_media/)
set -euo pipefail
dir="${1:-demo_media}"
mkdir -p "$dir"
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
ff -f lavfi -i "testsrc2=size=320x192:rate=24" -frames:v 1 "$dir/first.png"
ff -f lavfi -i "gradients=size=320x192:seed=7" -frames:v 1 "$dir/last.png"
ff -f lavfi -i "mandelbrot=size=192x256" -frames:v 1 "$dir/ref.png"
ff -f lavfi -i "testsrc2=size=320x192:rate=24" -f lavfi -i "sine=frequency=440:sample_rate=44100" -t 2 \
  -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest "$dir/clip.mp4"
ff -f lavfi -i "sine=frequency=660:sample_rate=44100" -t 2 "$dir/tone.wav"
echo "$dir: first.png last.png ref.png clip.mp4 tone.wav"
