#!/usr/bin/env bash
# Why do two GPUs running SP2 clock lower than one GPU alone (bench/RESULTS.md, sessions 8-9)?
# On nvidia-h200-x2, the one-GPU 768p forward on GPU 0 three ways, with telemetry:
#   alone; beside the same forward on GPU 1 (a second process: both GPUs busy, no traffic);
#   beside SP2-shaped copy-engine traffic between the GPUs (scripts/device/p2p_load.py: traffic,
#   GPU 1's SMs idle); then alone again, and SP2 itself for its clocks in the same call.
# If "beside GPU 1" alone slows GPU 0, the cause is the shared chassis (heat, power delivery); if
# the traffic does, it is the link. Usage (carry gpu-dist): bash scripts/device/sp_clock_probe.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source scripts/device/gpu_telemetry.sh
res="${RES:-768p}"
median() {  # label: the bench's median forward from its JSON on stdin
  python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('$1:', round(d['forward_s_median'], 4), round(d['forward_s_min'], 4), round(d['forward_s_max'], 4))"
}
bench() {  # label, device
  gpu-dist/orochi bench dit --res "$res" --device "$2" --warmup 2 --iters 5 --json 2> "$OUT/$1.err" | median "$1"
}
telemetry_start "$OUT"
telemetry_mark "gpu0 alone"
bench gpu0_alone 0
telemetry_mark "gpu0 beside gpu1 forward"
( bench gpu1_beside 1 > "$OUT/gpu1_beside.txt" ) &
other=$!
bench gpu0_beside_gpu1 0
wait "$other"; cat "$OUT/gpu1_beside.txt"
telemetry_mark "gpu0 beside p2p traffic"
python3 scripts/device/p2p_load.py --seconds "${LOAD_SECONDS:-75}" > "$OUT/p2p_load.txt" 2>&1 &
load=$!
sleep 2
bench gpu0_beside_p2p 0
kill -TERM "$load" 2> /dev/null; wait "$load" 2> /dev/null; cat "$OUT/p2p_load.txt"
telemetry_mark "gpu0 alone again"
bench gpu0_alone_again 0
telemetry_mark "sp2 (both GPUs, one request)"
gpu-dist/orochi bench dit --res "$res" --gpus 2 --parallel sp --warmup 2 --iters 5 --json 2> "$OUT/sp2.err" | median sp2
telemetry_stop
