#!/usr/bin/env bash
# On the device machine, in one call: the GPU tests of the switchable paths, then `orochi bench
# dit` with each switch beside the default, same GPU(s), same call, ROUNDS times in alternation:
# one line per run, with each run's SM clock, power and temperature at the end.
# Usage (device run, carry .pack after unpacking gpu-dist): bash scripts/device/run_h3_ab.sh [480p 768p]
# Env: VARIANTS (space-separated; each `default` or VAR=VALUE, several joined by `+`; default: the
# q/k norm kernels and the sm90a GEMM), BENCH_ARGS (for example "--gpus 2 --parallel sp"), TESTS
# (test executables, "" for none), ROUNDS (default 1), WARMUP, ITERS.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
resolutions=("${@:-480p}")

source scripts/device/gpu_telemetry.sh

for t in ${TESTS-test_cuda_gemm_sm90a test_cuda_ops_norm}; do
  timeout 300 "gpu-dist/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
  echo "$t: exit $? $(grep -cE '^\[  FAILED' "$OUT/$t.log") failed"
  grep -hE "timing|FAILED|Failure|sm90a|vs 1 GPU" "$OUT/$t.log" | head -20
done

telemetry_start "$OUT"
for res in "${resolutions[@]}"; do
  for round in $(seq "${ROUNDS:-1}"); do
    for variant in ${VARIANTS:-default OROCHI_QK_NORM_KERNEL=items OROCHI_GEMM=sm90a}; do
      env_args=()
      [ "$variant" != default ] && IFS=+ read -r -a env_args <<< "$variant"
      label="${res}_${round}_${variant//[^A-Za-z0-9=_.-]/_}"
      telemetry_mark "$res $round $variant"
      # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
      env "${env_args[@]}" timeout 300 gpu-dist/orochi bench dit --res "$res" ${BENCH_ARGS:-} --warmup "${WARMUP:-2}" \
        --iters "${ITERS:-5}" --json 2> "$OUT/ab_$label.err" |
        python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('%s %s %-48s %.3f s (%.3f-%.3f) %s' % ('$res', '$round', '$variant', d['forward_s_median'], d['forward_s_min'], d['forward_s_max'], d['outputs_fnv1a']))" \
        || tail -3 "$OUT/ab_$label.err"
    done
  done
done
telemetry_stop
