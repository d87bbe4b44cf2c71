#!/usr/bin/env bash
# On the device machine, in one call: the Qwen3-VL text encoder's weights from page-cached files
# to the GPU. `orochi bench text --write-checkpoint` writes the 32B model's first $LAYERS layers
# (random weights of the real shapes, bf16, one safetensors file per layer) to $CKPT; the files are
# read once so they sit in the page cache; then `bench text --checkpoint` loads them (timed: open +
# map + staged upload) and runs the stack, whose output hash must equal the random-init run's.
# Then the same with the last $STREAM layers streamed from pinned host RAM (and from the second
# GPU when there is one). Prints one table; JSON lines in $OUT/qwen3vl_load.jsonl.
# Usage (carry .pack, or gpu-dist): bash scripts/device/run_qwen3vl_load.sh
#   LAYERS (default 50), TOKENS (256), STREAM (30), CKPT (/tmp/qwen3vl_text), KEEP=1 keeps the files.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
if [ -f .pack/gpu-dist.tar.xz ] && [ ! -x gpu-dist/orochi ]; then tar xJf .pack/gpu-dist.tar.xz || exit 1; fi
layers="${LAYERS:-50}" tokens="${TOKENS:-256}" stream="${STREAM:-30}" ckpt="${CKPT:-/tmp/qwen3vl_text}"
jsonl="$OUT/qwen3vl_load.jsonl"
bench() {  # name, then bench text arguments
  local name="$1"; shift
  if gpu-dist/orochi bench text --layers "$layers" --tokens "$tokens" --iters 5 --warmup 2 --json "$@" \
      2> "$OUT/qwen3vl_$name.err" > "$OUT/qwen3vl_$name.json"; then
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['run']=sys.argv[2]; print(json.dumps(d))" \
      "$OUT/qwen3vl_$name.json" "$name" >> "$jsonl"
  else
    echo "$name: FAILED"; tail -3 "$OUT/qwen3vl_$name.err"
  fi
}
rm -rf "$ckpt"
echo "== write $layers layers to $ckpt"
bench random --write-checkpoint "$ckpt"
du -sh "$ckpt"; df -h "$(dirname "$ckpt")" | tail -1
sync
cat "$ckpt"/*.safetensors > /dev/null  # into the page cache (the write may have gone to disk)
echo "== load from the page cache"
bench checkpoint --checkpoint "$ckpt"
bench checkpoint_again --checkpoint "$ckpt"
bench stream_host --checkpoint "$ckpt" --stream-layers "$stream" --tier host
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  bench stream_peer --checkpoint "$ckpt" --stream-layers "$stream" --tier peer
fi
[ "${KEEP:-0}" = 1 ] || rm -rf "$ckpt"
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| run | layers streamed | weights on GPU GiB | load s | upload GB/s | encode median ms (min-max) | output fnv1a |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    load = r.get("load_s", r.get("init_weights_s", 0.0))
    gbps = f"{r['upload_gbps']:.1f}" if "upload_gbps" in r else "-"
    enc = f"{1e3 * r['encode_s_median']:.2f} ({1e3 * r['encode_s_min']:.2f}-{1e3 * r['encode_s_max']:.2f})"
    print(f"| {r['run']} | {r['stream_layers']} | {r['weights_gib']:.2f} | {load:.2f} | {gbps} | {enc} | {r['outputs_fnv1a']} |")
print("outputs identical across runs:", len({r["outputs_fnv1a"] for r in rows}) == 1)
PY
