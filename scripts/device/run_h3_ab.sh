#!/usr/bin/env bash
# On the device machine, in one call: the GPU tests of the switchable kernels (the experimental
# sm_90a GEMM, the two q/k norm kernels), then `orochi bench dit` with each switch beside the
# default, same GPU, same call: one line per variant.
# Usage (device run, carry .pack after unpacking gpu-dist): bash scripts/device/run_h3_ab.sh [480p 768p]
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export OROCHI_TEST_DATA_DIR="$root/tests/data"
resolutions=("${@:-480p}")

for t in test_cuda_gemm_sm90a test_cuda_ops_norm; do
  timeout 300 "gpu-dist/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
  echo "$t: exit $? $(grep -cE '^\[  FAILED' "$OUT/$t.log") failed"
  grep -hE "timing|FAILED|Failure|sm90a" "$OUT/$t.log" | head -20
done

for res in "${resolutions[@]}"; do
  for variant in default OROCHI_QK_NORM_KERNEL=items OROCHI_GEMM=sm90a; do
    env_args=()
    [ "$variant" != default ] && read -r -a env_args <<< "$variant"
    env "${env_args[@]}" timeout 300 gpu-dist/orochi bench dit --res "$res" --warmup "${WARMUP:-2}" --iters "${ITERS:-5}" \
      --json 2> "$OUT/ab_${res}_${variant// /_}.err" |
      python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('%s %-48s %.3f s (%.3f-%.3f) %s' % ('$res', '$variant', d['forward_s_median'], d['forward_s_min'], d['forward_s_max'], d['outputs_fnv1a']))" \
      || tail -3 "$OUT/ab_${res}_${variant// /_}.err"
  done
done
