#!/usr/bin/env bash
# On the device machine, in one call (issue 24's LoRA check): a random rank-64/16 diffusers-format
# LoRA on the full-size random-weight model. `orochi bench dit` without and with `--lora` (merged on
# the GPU: the merge time, and the per-forward time with the merged LoRA vs without), then diffusers'
# transformer on the same weights with the LoRA unmerged as PEFT runs it (compare_h3_full.py --lora):
# rel L2 of both outputs (goal <= 1e-2).
# Usage (device run, carry .pack .whl): bash scripts/device/compare_h3_lora.sh [480p]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
if [ -f .pack/gpu-dist.tar.xz ]; then rm -rf gpu-dist && tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
res="${1:-480p}"
dir="${DUMP_DIR:-/tmp/h3_lora}"
mkdir -p "$dir"
lora="$dir/lora_r64_r16.safetensors"
python3 scripts/device/make_random_lora.py --layers 50 --out "$lora" || exit 1
echo "== bench dit $res, no LoRA"
gpu-dist/orochi bench dit --res "$res" --warmup 1 --iters 5 --json 2> "$OUT/bench_plain.err" | tee "$OUT/bench_plain.json" \
  | python3 -c "import json,sys; j=json.load(sys.stdin); print('[lora-check] plain median %.4f s (min %.4f, max %.4f)' % (j['forward_s_median'], j['forward_s_min'], j['forward_s_max']))"
echo "== bench dit $res, with the LoRA merged on the GPU"
gpu-dist/orochi bench dit --res "$res" --warmup 1 --iters 5 --json --lora "$lora" --dump-outputs "$dir/ours.safetensors" \
  2> "$OUT/bench_lora.err" | tee "$OUT/bench_lora.json" \
  | python3 -c "import json,sys; j=json.load(sys.stdin); l=j['loras'][0]; print('[lora-check] lora median %.4f s (min %.4f, max %.4f); merge %.3f s, %d parameters, %s' % (j['forward_s_median'], j['forward_s_min'], j['forward_s_max'], l['merge_s'], l['parameters'], l['format']))" \
  || { tail -5 "$OUT/bench_lora.err"; exit 1; }
echo "== diffusers with the LoRA unmerged (PEFT's arithmetic)"
PYTHONUNBUFFERED=1 OUT="$OUT" python3 scripts/device/compare_h3_full.py --dump "$dir/ours.safetensors" --res "$res" \
  --lora "$lora" 2> "$OUT/compare_lora.err" | sed 's/^/[lora-check] /'
code=${PIPESTATUS[0]}
tail -3 "$OUT/compare_lora.err"
exit "$code"
