#!/usr/bin/env bash
# On a multi-GPU device machine, in one call: the multi-GPU tests (2 GPUs), `orochi bench dit` on 1
# GPU and on $GPUS GPUs (each --parallel layout asked for) and diffusers' Ulysses over $GPUS GPUs
# (../shared/bench/peer_h3.py under torchrun, copied to .peer/), then one table with the speed-ups.
# Usage (device run on nvidia-h200-x2, carry .pack .whl .peer after unpacking gpu-dist):
#   LAYOUTS="sp tp" bash scripts/device/run_h3_multi_gpu.sh 480p 768p
# Env: GPUS (default 2; 4 or 8 on the larger kinds), SKIP_TESTS=1, SKIP_PEER=1, SKIP_ONE=1 (no 1-GPU
# bench), ITERS, WARMUP, PROFILE=1.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1; head -4 "$OUT/topo.txt"
resolutions=("${@:-480p}")
source scripts/device/gpu_telemetry.sh

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== multi-GPU tests"
  for t in gpu-dist/test_dist_nccl gpu-dist/test_dist_peer_copy gpu-dist/test_h3_gpu_parallel; do
    [ -x "$t" ] || continue
    timeout 300 "$t" --gtest_brief=1 > "$OUT/$(basename "$t").log" 2>&1
    echo "$(basename "$t"): exit $? $(grep -cE '^\[  FAILED' "$OUT/$(basename "$t").log") failed"
    grep -hE "vs 1 GPU|vs diffusers|ended after|returned after|FAILED|Failure|rel_l2|audio" "$OUT/$(basename "$t").log" | head -40
  done
fi

echo "== orochi bench dit"
telemetry_start "$OUT"
for res in "${resolutions[@]}"; do
  if [ "${SKIP_ONE:-0}" != 1 ]; then
    telemetry_mark "orochi $res 1 GPU"
    gpu-dist/orochi bench dit --res "$res" --warmup "${WARMUP:-2}" --iters "${ITERS:-5}" --json \
      2> "$OUT/bench_${res}_1gpu.err" | tee -a "$OUT/orochi_multi.jsonl"
    telemetry_mark ""
    tail -2 "$OUT/bench_${res}_1gpu.err"
  fi
  for layout in ${LAYOUTS:-auto}; do
    telemetry_mark "orochi $res ${GPUS:-2} GPUs $layout"
    timeout 300 gpu-dist/orochi bench dit --res "$res" --gpus "${GPUS:-2}" --parallel "$layout" --warmup "${WARMUP:-2}" \
      --iters "${ITERS:-5}" --json ${PROFILE:+--profile} 2> "$OUT/bench_${res}_${GPUS:-2}gpu_$layout.err" | tee -a "$OUT/orochi_multi.jsonl"
    telemetry_mark ""
    grep -E "layout|median|error|profile" "$OUT/bench_${res}_${GPUS:-2}gpu_$layout.err" | tail -30
  done
done

if [ "${SKIP_PEER:-0}" != 1 ]; then
  echo "== diffusers Ulysses peer, ${GPUS:-2} GPUs"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
  for res in "${resolutions[@]}"; do
    telemetry_mark "diffusers $res ${GPUS:-2} GPUs"
    OUT="$OUT" PYTHONUNBUFFERED=1 timeout 400 torchrun --nproc-per-node="${GPUS:-2}" .peer/peer_h3.py --res "$res" \
      --iters "${ITERS:-5}" > "$OUT/peer${GPUS:-2}_$res.log" 2>&1 || tail -20 "$OUT/peer${GPUS:-2}_$res.log"
    telemetry_mark ""
  done
fi
python3 scripts/device/h3_multi_table.py "$OUT/orochi_multi.jsonl" "$OUT/peer_h3.jsonl"
telemetry_stop
