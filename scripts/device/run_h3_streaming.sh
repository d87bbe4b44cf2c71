#!/usr/bin/env bash
# On a 2-GPU device machine, in one call: the weight-streaming GPU tests, then `orochi bench dit`
# at one canvas all-resident, with --vram-per-gpu CAP from pinned host RAM, and from the second GPU;
# then one table: time vs resident, outputs hash (equal = bit-identical), planned vs used memory.
# Usage (device run on nvidia-h200-x2, after unpacking gpu-dist): bash scripts/device/run_h3_streaming.sh [768p] [24]
# Env: RUNS (default "resident host peer"), SKIP_TESTS=1, ITERS, WARMUP.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
res="${1:-768p}" cap="${2:-24}"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 300 gpu-dist/test_h3_gpu_streaming --gtest_brief=1 > "$OUT/test_h3_gpu_streaming.log" 2>&1
  echo "test_h3_gpu_streaming: exit $? $(grep -cE '^\[  FAILED' "$OUT/test_h3_gpu_streaming.log") failed"
  grep -hE "FAILED|Failure|differs" "$OUT/test_h3_gpu_streaming.log" | head -20
fi
run() {  # name, extra args
  gpu-dist/orochi bench dit --res "$res" --warmup "${WARMUP:-1}" --iters "${ITERS:-3}" --json "${@:2}" \
    2> "$OUT/stream_$1.err" | tee -a "$OUT/streaming.jsonl" > /dev/null
  grep -E "stream|error" "$OUT/stream_$1.err" | head -3
}
for r in ${RUNS:-resident host peer}; do
  case "$r" in
    resident) run resident ;;
    *) run "$r" --vram-per-gpu "$cap" --tier "$r" ;;
  esac
done
python3 - "$OUT/streaming.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
base = rows[0]["forward_s_median"] if rows else None
print(f"{'run':>9} {'median s (min-max)':>22} {'vs resident':>11} {'streamed':>8} {'tier GiB':>8} {'planned GiB':>11} {'used GiB':>8}  outputs")
for r in rows:
    s = r.get("streaming", {})
    name = s.get("tier", "resident")
    span = f"{r['forward_s_median']:.3f} ({r['forward_s_min']:.3f}-{r['forward_s_max']:.3f})"
    print(f"{name:>9} {span:>22} {r['forward_s_median'] / base:>11.3f} {s.get('streamed_blocks', 0):>8} "
          f"{s.get('tier_gib', 0):>8.1f} {s.get('planned_denoiser_gib', 0):>11.2f} {r['gpu_used_gib']:>8.2f}  {r['outputs_fnv1a']}")
PY
