#!/usr/bin/env bash
# On the device machine, one H200 (issue 25): the activations' per-token quantization fused into the
# kernels that produce them (fused-quant=on: the AdaLN norms and SwiGLU write the codes) against a
# separate quantize pass before each quantized linear (off), in one call.
#  1. GPU tests: test_cuda_quantized_output (each fused kernel's codes and scales vs the plain kernel
#     + quantize_rows and vs the CPU, bit for bit), test_h3_gpu_fused_quant (the narrow fp8 / int8
#     forward fused vs unfused: bit-identical) and test_cuda_quantize (quantize_rows, whose device
#     code moved to kernels/quantize_device.cuh).
#  2. Per resolution (default 480p 768p) and precision (PRECISIONS, default "fp8"): `orochi bench dit`
#     on the same random weights and request with --set fused-quant=on and off: median forward time
#     of each, and whether the two outputs are the same bytes (they must be).
# Marked lines: FUSED_QUANT_TEST, FUSED_QUANT_TIME, FUSED_QUANT_SAME (and the tests' H3_FUSED_QUANT
# and [fused-quant-timing] lines: each fused kernel vs kernel + quantize_rows at 480p's row count);
# logs and the bench JSON lines in $OUT. About 3-4 minutes (WARMUP=1 ITERS=3 by default).
# Usage (device run, carry .pack): bash scripts/device/run_h3_fused_quant.sh [480p] [768p]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
[ -d gpu-dist ] || tar xJf .pack/gpu-dist.tar.xz
DUMP_DIR="${DUMP_DIR:-/tmp/h3_fused_quant}"
mkdir -p "$DUMP_DIR" "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0

for t in test_cuda_quantized_output test_h3_gpu_fused_quant test_cuda_quantize; do
  start=$SECONDS
  timeout 240 "gpu-dist/$t" > "$OUT/logs/$t.log" 2>&1
  code=$?
  [ $code -eq 0 ] || status=1
  echo "FUSED_QUANT_TEST $t: exit $code, $(grep -cE '^\[  FAILED' "$OUT/logs/$t.log") failed, $((SECONDS - start)) s"
  grep -hE "^H3_FUSED_QUANT|^\[fused-quant-timing\]|Failure|FAILED  \]" "$OUT/logs/$t.log" | head -30
  # Any nonzero mismatch count in the kernels' lines.
  grep -hE "differing code bytes=[1-9]|scale bytes=[1-9]" "$OUT/logs/$t.log" | head -10
done

bench() {  # tag precision fused(on|off) extra-args...
  local tag=$1 precision=$2 fused=$3
  shift 3
  local name="${tag}_${precision}_${fused}" start=$SECONDS
  if ! gpu-dist/orochi bench dit --precision "$precision" --set "fused-quant=$fused" --json \
      --dump-outputs "$DUMP_DIR/$name.safetensors" "$@" 2> "$OUT/logs/bench_$name.err" > "$OUT/logs/bench_$name.json"; then
    echo "bench $name: FAILED"
    tail -5 "$OUT/logs/bench_$name.err"
    status=1
    return 1
  fi
  cat "$OUT/logs/bench_$name.json" >> "$OUT/fused_quant_bench.jsonl"
  echo "bench $name: $((SECONDS - start)) s"
}

median() {  # name -> forward_s_median
  python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["forward_s_median"])' \
    "$OUT/logs/bench_$1.json" 2>/dev/null || echo "n/a"
}

ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print('%.3f' % (float(a) / float(b)))" "$1" "$2" 2>/dev/null || echo n/a; }

resolutions=("$@")
[ ${#resolutions[@]} -eq 0 ] && resolutions=(480p 768p)
for res in "${resolutions[@]}"; do
  for p in ${PRECISIONS:-fp8}; do
    bench "$res" "$p" off --res "$res" --warmup "${WARMUP:-1}" --iters "${ITERS:-3}"
    bench "$res" "$p" on --res "$res" --warmup "${WARMUP:-1}" --iters "${ITERS:-3}"
    off=$(median "${res}_${p}_off") on=$(median "${res}_${p}_on")
    echo "FUSED_QUANT_TIME $res $p 50 layers: fused ${on} s, unfused ${off} s (fused/unfused x$(ratio "$on" "$off"))"
    if cmp -s "$DUMP_DIR/${res}_${p}_on.safetensors" "$DUMP_DIR/${res}_${p}_off.safetensors"; then
      echo "FUSED_QUANT_SAME $res $p: outputs bit-identical"
    else
      echo "FUSED_QUANT_SAME $res $p: outputs DIFFER"
      status=1
      python3 scripts/device/compare_h3_precision.py --label "$res fused vs unfused" --ref-name "unfused $p" \
        --bf16 "$DUMP_DIR/${res}_${p}_off.safetensors" "$DUMP_DIR/${res}_${p}_on.safetensors"
    fi
  done
done

tar czf "$OUT/h3_fused_quant_logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
exit $status
