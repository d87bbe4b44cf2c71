#!/usr/bin/env bash
# Why do two GPUs running SP2 clock lower than one GPU alone (bench/RESULTS.md, sessions 8-9)?
# On nvidia-h200-x2, the one-GPU 768p forward on GPU 0 three ways, with telemetry:
#   alone; beside the same forward on GPU 1 (a second process: both GPUs busy, no traffic);
#   beside SP2-shaped copy-engine traffic between the GPUs (scripts/device/p2p_load.py: traffic,
#   GPU 1's SMs idle); then alone again, and SP2 itself for its clocks in the same call.
# If "beside GPU 1" alone slows GPU 0, the cause is the shared chassis (heat, power delivery); if
# the traffic does, it is the link. Usage (carry gpu-dist): bash scripts/device/sp_clock_probe.sh
# (STEPS, RES, WARMUP, ITERS below).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
source scripts/device/gpu_telemetry.sh
res="${RES:-768p}" warmup="${WARMUP:-2}" iters="${ITERS:-5}"
median() {  # label: the bench's median forward from its JSON on stdin
  python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('$1:', round(d['forward_s_median'], 4), round(d['forward_s_min'], 4), round(d['forward_s_max'], 4))"
}
bench() {  # label, device
  gpu-dist/orochi bench dit --res "$res" --device "$2" --warmup "$warmup" --iters "$iters" --json 2> "$OUT/$1.err" | median "$1"
}
# STEPS: what runs, in order: alone (GPU 0's forward), beside (and the same forward on GPU 1),
# p2p:QKV_MB:O_MB (beside p2p_load.py with those sizes per 58 ms period), sp2 (SP2 itself).
steps="${STEPS:-alone beside p2p:408:136 alone sp2}"
for step in $steps; do  # every step checked before anything starts
  [[ "$step" =~ ^(alone|beside|sp2|p2p:[0-9]+:[0-9]+)$ ]] || { echo "unknown step '$step' (alone, beside, p2p:QKV_MB:O_MB, sp2)" >&2; exit 2; }
done
telemetry_start "$OUT"
n=0
for step in $steps; do
  n=$((n + 1))
  case "$step" in
    alone)
      telemetry_mark "$n gpu0 alone"
      bench "${n}_gpu0_alone" 0 ;;
    beside)
      telemetry_mark "$n gpu0 beside gpu1 forward"
      ( bench "${n}_gpu1_beside" 1 > "$OUT/gpu1_beside.txt" ) &
      other=$!
      bench "${n}_gpu0_beside_gpu1" 0
      wait "$other"; cat "$OUT/gpu1_beside.txt" ;;
    p2p:*)
      IFS=: read -r _ qkv o <<< "$step"
      telemetry_mark "$n gpu0 beside p2p $qkv+$o MB"
      # The load runs until the forward is done (SIGTERM), LOAD_SECONDS at most.
      python3 scripts/device/p2p_load.py --seconds "${LOAD_SECONDS:-3600}" --qkv-mb "$qkv" --o-mb "$o" > "$OUT/p2p_load.txt" 2>&1 &
      load=$!
      sleep 2
      bench "${n}_gpu0_beside_p2p_${qkv}_${o}" 0
      kill -TERM "$load" 2> /dev/null; wait "$load" 2> /dev/null; cat "$OUT/p2p_load.txt" ;;
    sp2)
      telemetry_mark "$n sp2 (both GPUs, one request)"
      gpu-dist/orochi bench dit --res "$res" --gpus 2 --parallel sp --warmup "$warmup" --iters "$iters" --json 2> "$OUT/${n}_sp2.err" | median "${n}_sp2" ;;
  esac
done
telemetry_stop
