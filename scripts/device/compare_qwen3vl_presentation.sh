#!/usr/bin/env bash
# On the device machine, in one call (issue 22, "Done when", second bullet): our GPU Qwen3-VL conditioner
# (vision tower + the 32B stack's first 50 layers, bf16, counter-based random weights of the release's
# shapes) over H3 ref2va presentations built from synthetic media by our processor and presentation
# builder, timed and dumped (test_qwen3vl_presentation_gpu with OROCHI_QWEN3VL_FULL_DIR), then
# transformers' Qwen3VLModel on the same weights and inputs (compare_qwen3vl_presentation.py: an fp32
# reference of ref2va-2img first, then bf16, timed with CUDA events after a warm-up).
#   ref2va-2img  2 images at 1344x768 + a 124-frame 1344x768 video (~8.2k tokens): rel L2 <= 2e-2 at
#                layer 50 and <= 5e-3 after 2 layers vs transformers bf16, its bf16-vs-fp32 beside it;
#   ref2va-4img  4 images at 3648x2048 + the same video (~35.3k tokens); text-1000: 1000 text tokens.
# Speed goals (reported, not gated): ours <= 0.7x transformers on both presentations, <= 1.0x on text-1000.
# PRECISIONS=bf16,fp8 (or bf16,fp8,int8): our text stack also at those precisions (the same weights
# quantized at load, as --set conditioner-precision runs it; the tower stays bf16), each timed on the
# same cases and compared with transformers bf16 / fp32 in the same call: one
# "[conditioner-precision] case=... precision=..." line per case and precision (time, ratios, rel L2).
# Usage (device run, carry .pack built by scripts/device/build_gpu.sh):
#   bash scripts/device/compare_qwen3vl_presentation.sh
#   CASES (default ref2va-2img,ref2va-4img,text-1000), ITERS (default 3), WARMUP (ours, default 1),
#   SEED (default 7), NO_FP32=1 to skip the fp32 reference, DUMP_DIR (default /tmp/qwen_presentation;
#   the dumps take ~3.5 GB, ~1.5 GB more per extra precision), PRECISIONS (default bf16), OURS_TIMEOUT
#   (default 420 s). Nothing is installed (torch and transformers are on the device).
# Results: $OUT/qwen3vl_presentation_gpu.log (our side), $OUT/compare_qwen3vl_presentation.jsonl (the
#   comparison, both times side by side), $OUT/compare_qwen3vl_presentation_py.err; exit 1 on FAIL.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
DUMP_DIR="${DUMP_DIR:-/tmp/qwen_presentation}"
cases="${CASES:-ref2va-2img,ref2va-4img,text-1000}" iters="${ITERS:-3}" warmup="${WARMUP:-1}" seed="${SEED:-7}"
precisions="${PRECISIONS:-bf16}"
mkdir -p "$DUMP_DIR" && rm -f "$DUMP_DIR"/*.safetensors "$DUMP_DIR"/*.json  # also an earlier call's <case>.<precision> dumps
# A carried .pack wins over a gpu-dist/ left on the device by an earlier call (it may be stale).
if [ -f .pack/gpu-dist.tar.xz ]; then rm -rf gpu-dist && tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
[ -x gpu-dist/test_qwen3vl_presentation_gpu ] || { echo "no gpu-dist/test_qwen3vl_presentation_gpu: carry .pack"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader
t0=$SECONDS
echo "== ours: test_qwen3vl_presentation_gpu ($cases; text stack at $precisions; warm-up $warmup, $iters timed)"
OROCHI_QWEN3VL_FULL_DIR="$DUMP_DIR" OROCHI_QWEN3VL_FULL_CASES="$cases" OROCHI_QWEN3VL_FULL_ITERS="$iters" \
OROCHI_QWEN3VL_FULL_WARMUP="$warmup" OROCHI_QWEN3VL_FULL_SEED="$seed" OROCHI_QWEN3VL_FULL_PRECISIONS="$precisions" \
  timeout "${OURS_TIMEOUT:-420}" gpu-dist/test_qwen3vl_presentation_gpu > "$OUT/qwen3vl_presentation_gpu.log" 2>&1
status=$?
grep -E "^tower|^text stack|^tiny presentation|\[presentation-full\]|Failure|FAILED|PASSED" "$OUT/qwen3vl_presentation_gpu.log"
[ $status -eq 0 ] || { echo "our side failed (exit $status)"; tail -20 "$OUT/qwen3vl_presentation_gpu.log"; exit 1; }
echo "== ours took $((SECONDS - t0)) s; transformers Qwen3VLModel on the same weights and inputs"
t1=$SECONDS
fp32_flag=""; [ "${NO_FP32:-0}" = 1 ] && fp32_flag="--no-fp32"
PYTHONUNBUFFERED=1 OUT="$OUT" python3 scripts/device/compare_qwen3vl_presentation.py --dir "$DUMP_DIR" --cases "$cases" \
  --iters "$iters" $fp32_flag 2> "$OUT/compare_qwen3vl_presentation_py.err"
status=$?
tail -12 "$OUT/compare_qwen3vl_presentation_py.err"
echo "== transformers side took $((SECONDS - t1)) s; whole call $((SECONDS - t0)) s"
exit $status
