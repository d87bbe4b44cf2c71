#!/usr/bin/env bash
# On the device machine, one H200 (issue 25): the quantized denoiser forward in one call.
#  1. GPU tests: test_h3_gpu_precision (narrow model: fp8 / int8 vs bf16 GPU vs CPU f32, streamed
#     fp8 blocks), test_engine_gpu_precision (the demo model through the engine in fp8 / int8 vs
#     bf16: frames and waveform PSNR) and test_cuda_gemm_quantized (the GEMMs, chunked accumulators).
#  2. Per resolution (default 480p 768p): `orochi bench dit --random-weights` in each of VARIANTS
#     (default "bf16 fp8 fp8lin int8": fp8 is --precision fp8 with FP8 attention, its default;
#     fp8lin keeps attention bf16, --set attention-precision=bf16; also bf16attn8: bf16 linears with
#     FP8 attention, fp8fast: fp8 with --set fp8-gemm-accum=fast; fp8mma4 / fp8mma0: the FP8
#     attention's mma row sums with P V promoted every 4 key tiles / never; fp8mma4fast: fp8mma4 with
#     fp8-gemm-accum=fast, fp8's defaults since session 19; fp8first: session 18's defaults, f32 sums,
#     P V promoted per tile, promoted GEMM accumulation) on the same weights and request
#     (seed), median forward time of each, then rel L2 and cosine of each output against the bf16
#     output (compare_h3_precision.py).
#  3. The error against depth at 480p (DEPTHS, default "1 10 25"; 50 is step 2): the same at fewer
#     layers, so the profile shows how the quantization error grows block by block.
# bf16's own distance (to diffusers bf16 on the same weights: 8.3e-3 at 480p, bench/RESULTS.md) is
# compare_h3_full.sh's; no f32 reference of the full model fits one GPU.
# Marked lines: PRECISION_TIME, PRECISION_MEM, PRECISION_ACC, PRECISION_STREAM (and the tests' H3_PRECISION / [engine-gpu] lines); full
# logs and the bench JSON lines in $OUT. About 4-5 minutes on one H200 (WARMUP=1 ITERS=3 by default).
# Usage (device run, carry .pack): bash scripts/device/run_h3_precision.sh [480p] [768p]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
DUMP_DIR="${DUMP_DIR:-/tmp/h3_precision}"
mkdir -p "$DUMP_DIR" "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
status=0

# The GEMM test's new case and its odd shapes (its H3-shape cases ran with bench_fp8_gemm.sh).
for t in test_h3_gpu_precision test_engine_gpu_precision test_cuda_gemm_quantized; do
  start=$SECONDS
  filter='*'
  [ "$t" = test_cuda_gemm_quantized ] && filter='CudaGemmQuantized.AGivenAccumulator*:CudaGemmQuantized.OddShapes'
  timeout 240 "gpu-dist/$t" --gtest_filter="$filter" > "$OUT/logs/$t.log" 2>&1
  code=$?
  [ $code -eq 0 ] || status=1
  echo "$t: exit $code, $(grep -cE '^\[  FAILED' "$OUT/logs/$t.log") failed, $((SECONDS - start)) s"
  grep -hE "^H3_PRECISION|^\[engine-gpu\]|Failure|FAILED  \]" "$OUT/logs/$t.log" | head -40
done

# A variant's bench dit flags.
variant_args() {
  case "$1" in
    fp8lin) echo "--precision fp8 --set attention-precision=bf16" ;;
    bf16attn8) echo "--precision bf16 --set attention-precision=fp8" ;;
    fp8fast) echo "--precision fp8 --set fp8-gemm-accum=fast" ;;
    fp8first) echo "--precision fp8 --set fp8-attention-sums=f32,fp8-attention-promote=1,fp8-gemm-accum=promoted" ;;
    fp8mma4) echo "--precision fp8 --set fp8-attention-sums=mma,fp8-attention-promote=4" ;;
    fp8mma0) echo "--precision fp8 --set fp8-attention-sums=mma,fp8-attention-promote=0" ;;
    fp8mma4fast) echo "--precision fp8 --set fp8-attention-sums=mma,fp8-attention-promote=4,fp8-gemm-accum=fast" ;;
    *) echo "--precision $1" ;;
  esac
}
VARIANTS=(${VARIANTS:-bf16 fp8 fp8lin int8})

# One bench dit run: JSON line to $OUT/precision_bench.jsonl, its dump to $DUMP_DIR/<tag>_<variant>.
bench() {  # tag variant extra-args...
  local tag=$1 precision=$2
  shift 2
  local start=$SECONDS
  # shellcheck disable=SC2046
  if ! gpu-dist/orochi bench dit $(variant_args "$precision") --json --dump-outputs "$DUMP_DIR/${tag}_$precision.safetensors" "$@" \
      2> "$OUT/logs/bench_${tag}_$precision.err" > "$OUT/logs/bench_${tag}_$precision.json"; then
    echo "bench $tag $precision: FAILED"
    tail -5 "$OUT/logs/bench_${tag}_$precision.err"
    status=1
    return 1
  fi
  cat "$OUT/logs/bench_${tag}_$precision.json" >> "$OUT/precision_bench.jsonl"
  echo "bench $tag $precision: $((SECONDS - start)) s"
}

median() {  # tag precision -> forward_s_median
  python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["forward_s_median"])' \
    "$OUT/logs/bench_$1_$2.json" 2>/dev/null || echo "n/a"
}

memory() {  # tag precision -> "weights W GiB, request R GiB, GPU used U GiB"
  python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print("weights %.2f GiB, request %.2f GiB, GPU used %.2f GiB" % (j["weights_gib"], j["request_gib"], j["gpu_used_gib"]))' \
    "$OUT/logs/bench_$1_$2.json" 2>/dev/null || echo "n/a"
}

ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print('%.3f' % (float(a) / float(b)))" "$1" "$2" 2>/dev/null || echo n/a; }

resolutions=("$@")
[ ${#resolutions[@]} -eq 0 ] && resolutions=(480p 768p)
for res in "${resolutions[@]}"; do
  for p in "${VARIANTS[@]}"; do
    bench "$res" "$p" --res "$res" --warmup "${WARMUP:-1}" --iters "${ITERS:-3}"
  done
  b=$(median "$res" bf16)
  line="PRECISION_TIME $res 50 layers: bf16 ${b} s"
  dumps=()
  for p in "${VARIANTS[@]}"; do
    [ "$p" = bf16 ] && continue
    v=$(median "$res" "$p")
    line+=", $p ${v} s (x$(ratio "$v" "$b"))"
    dumps+=("$DUMP_DIR/${res}_$p.safetensors")
  done
  echo "$line"
  for p in "${VARIANTS[@]}"; do echo "PRECISION_MEM $res $p: $(memory "$res" "$p")"; done
  python3 scripts/device/compare_h3_precision.py --label "$res/50 layers" --bf16 "$DUMP_DIR/${res}_bf16.safetensors" \
    "${dumps[@]}" || status=1
done

for layers in ${DEPTHS-1 10 25}; do
  dumps=()
  for p in "${VARIANTS[@]}"; do
    bench "480p_L$layers" "$p" --res 480p --layers "$layers" --warmup 0 --iters 1
    [ "$p" = bf16 ] || dumps+=("$DUMP_DIR/480p_L${layers}_$p.safetensors")
  done
  python3 scripts/device/compare_h3_precision.py --label "480p/$layers layers" --bf16 "$DUMP_DIR/480p_L${layers}_bf16.safetensors" \
    "${dumps[@]}" || status=1
done

# Optional (CAP_GIB=24, about 40 s more): fp8 at 768p with only the blocks a CAP_GIB GPU holds
# resident, the rest streamed from pinned host RAM, against the resident fp8 run above.
if [ -n "${CAP_GIB:-}" ]; then
  bench 768p_cap fp8 --res 768p --vram-per-gpu "$CAP_GIB" --warmup "${WARMUP:-1}" --iters "${ITERS:-3}"
  c=$(median 768p_cap fp8) f=$(median 768p fp8)
  echo "PRECISION_STREAM 768p fp8 capped at $CAP_GIB GiB: ${c} s vs resident ${f} s (x$(ratio "$c" "$f"))"
  python3 scripts/device/compare_h3_precision.py --label "768p capped" --ref-name "resident fp8" --bf16 "$DUMP_DIR/768p_fp8.safetensors" \
    "$DUMP_DIR/768p_cap_fp8.safetensors" || status=1
fi

tar czf "$OUT/h3_precision_logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
exit $status
