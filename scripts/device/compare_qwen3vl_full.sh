#!/usr/bin/env bash
# On the device machine, in one call: `orochi bench text` with --dump-outputs (our GPU Qwen3-VL-32B text
# stack, random weights of the real shapes, bf16, timed), then transformers' Qwen3VLTextModel on the same
# weights and token ids (compare_qwen3vl_full.py, also timed); PASS when rel L2 <= 1e-2.
# Usage (device run, carry gpu-dist or .pack): bash scripts/device/compare_qwen3vl_full.sh
#   LAYERS (default 50, what MiniMax-H3 reads), TOKENS (default 256), SEED (default 7); LAYERS=1 for a quick
#   check. transformers is installed on the device; nothing is installed. The dump (~5 MB) goes to
#   DUMP_DIR (default /tmp/qwen_cmp).
# Results: our bench line in $OUT/compare_bench_text.jsonl, the comparison (both times side by side) in
#   $OUT/compare_qwen3vl.jsonl; exit 1 on FAIL.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
DUMP_DIR="${DUMP_DIR:-/tmp/qwen_cmp}"
layers="${LAYERS:-50}" tokens="${TOKENS:-256}" seed="${SEED:-7}"
mkdir -p "$DUMP_DIR"
# A carried .pack wins over a gpu-dist/ left on the device by an earlier call (it may be stale).
if [ -f .pack/gpu-dist.tar.xz ]; then rm -rf gpu-dist && tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
[ -x gpu-dist/orochi ] || { echo "no gpu-dist/orochi: carry .pack or gpu-dist"; exit 1; }

dump="$DUMP_DIR/ours.safetensors" bench_json="$DUMP_DIR/bench.json"
echo "== $layers layers, $tokens tokens: orochi bench text --dump-outputs"
if ! gpu-dist/orochi bench text --layers "$layers" --tokens "$tokens" --seed "$seed" --json --dump-outputs "$dump" \
    2> "$OUT/compare_bench_text.err" > "$bench_json"; then
  tail -5 "$OUT/compare_bench_text.err"
  exit 1
fi
cat "$bench_json" | tee -a "$OUT/compare_bench_text.jsonl"
echo "== transformers Qwen3VLTextModel on the same weights and ids"
PYTHONUNBUFFERED=1 OUT="$OUT" python3 scripts/device/compare_qwen3vl_full.py --dump "$dump" --layers "$layers" \
  --bench-json "$bench_json" 2> "$OUT/compare_qwen3vl_py.err"
status=$?
tail -4 "$OUT/compare_qwen3vl_py.err"
exit $status
