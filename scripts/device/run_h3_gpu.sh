#!/usr/bin/env bash
# On the device machine, in one call: the GPU tests, `orochi bench dit` and diffusers' forward
# (../shared/bench/peer_h3.py, copied to .peer/) on the same GPU, then one table with the ratio.
# Usage (device run, carry gpu-dist .whl .peer): bash scripts/device/run_h3_gpu.sh [480p 768p]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
resolutions=("${@:-480p}")
source scripts/device/gpu_telemetry.sh

echo "== GPU tests"
for t in gpu-dist/test_*; do
  [ "${SKIP_TESTS:-0}" = 1 ] && break
  "$t" --gtest_brief=1 > "$OUT/$(basename "$t").log" 2>&1
  echo "$(basename "$t"): exit $? $(grep -cE '^\[  FAILED' "$OUT/$(basename "$t").log") failed"
  grep -hE "rel_l2|TFLOP|H3 tiny|FAILED|Failure" "$OUT/$(basename "$t").log" | head -40
done

echo "== orochi bench dit"
telemetry_start "$OUT"
for res in "${resolutions[@]}"; do
  telemetry_mark "orochi $res"
  gpu-dist/orochi bench dit --res "$res" --warmup "${WARMUP:-2}" --iters "${ITERS:-5}" --json \
    2> "$OUT/bench_$res.err" | tee -a "$OUT/orochi_h3.jsonl"
  telemetry_mark ""
  tail -3 "$OUT/bench_$res.err"
done

if [ "${SKIP_PEER:-0}" != 1 ]; then
  echo "== diffusers peer"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
  for res in "${resolutions[@]}"; do
    telemetry_mark "diffusers $res"
    OUT="$OUT" PYTHONUNBUFFERED=1 torchrun --nproc-per-node=1 .peer/peer_h3.py --res "$res" --iters "${ITERS:-5}" \
      > "$OUT/peer_$res.log" 2>&1 || tail -20 "$OUT/peer_$res.log"
    telemetry_mark ""
  done
fi
python3 scripts/device/h3_table.py "$OUT/orochi_h3.jsonl" "$OUT/peer_h3.jsonl"
telemetry_stop
