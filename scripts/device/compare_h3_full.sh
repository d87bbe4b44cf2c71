#!/usr/bin/env bash
# On the device machine, in one call: `orochi bench dit` with --dump-outputs (our GPU forward, random
# weights of the real shapes, bf16), then diffusers' MiniMaxH3Transformer3DModel on the same weights and
# request (compare_h3_full.py); PASS when both outputs are within rel L2 1e-2.
# Usage (device run, carry gpu-dist .whl): bash scripts/device/compare_h3_full.sh [480p] [768p]
#   LAYERS=2 for a quick check (default 50, the released depth). The dumps (~17 MB at 480p, ~40 MB at
#   768p) go to DUMP_DIR (default /tmp/h3_compare), not $OUT: they would not come back anyway.
# Results: one JSON line per resolution in $OUT/compare_h3.jsonl; exit 1 if any FAIL.
# Side by side timing at other lengths: WARMUP / ITERS (default 0 / 1) for bench, BENCH_ARGS go to
# bench (e.g. "--text-rows 36000 --refs image:2048x3072,video:1344x768x120+audio,audio:5" for ref2va),
# PY_ARGS to compare_h3_full.py (e.g. "--backend _native_cudnn --warmup 1 --iters 2", as peer_h3.py).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
DUMP_DIR="${DUMP_DIR:-/tmp/h3_compare}"
layers="${LAYERS:-50}"
mkdir -p "$DUMP_DIR"
# The diffusers wheel (and its missing needs) carried in .whl/, as run_h3_gpu.sh installs them.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1

status=0
for res in "${@:-480p}"; do
  dump="$DUMP_DIR/ours_$res.safetensors"
  echo "== $res, $layers layers: orochi bench dit --dump-outputs"
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
  if ! gpu-dist/orochi bench dit --res "$res" --layers "$layers" --iters "${ITERS:-1}" --warmup "${WARMUP:-0}" ${BENCH_ARGS:-} --json --dump-outputs "$dump" \
      2> "$OUT/compare_bench_$res.err" | tee -a "$OUT/compare_bench.jsonl"; then
    tail -5 "$OUT/compare_bench_$res.err"
    status=1
    continue
  fi
  echo "== $res: diffusers on the same weights and request"
  # shellcheck disable=SC2086  # PY_ARGS is a list of arguments
  PYTHONUNBUFFERED=1 OUT="$OUT" python3 scripts/device/compare_h3_full.py --dump "$dump" --res "$res" --layers "$layers" ${PY_ARGS:-} \
    2> "$OUT/compare_py_$res.err" || status=1
  tail -4 "$OUT/compare_py_$res.err"
done
exit $status
