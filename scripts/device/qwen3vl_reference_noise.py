#!/usr/bin/env python3
"""How far transformers' own bf16 Qwen3-VL stack is from its fp32 run, on our random weights, next to
how far ours is from both: the yardstick for compare_qwen3vl_full.py's bf16 tolerance.

Run on the device after `compare_qwen3vl_full.sh` left its dump (default /tmp/qwen_cmp/ours.safetensors):
    python3 scripts/device/qwen3vl_reference_noise.py [--dump PATH] [--layers 50]
Prints one JSON line: transformers_bf16_vs_fp32, ours_vs_fp32, ours_vs_bf16 (relative L2). Needs room for
the fp32 model (~100 GB for 50 layers of the 32B shapes); the two models are built one after the other.
"""
import argparse
import json
import os
import sys

import torch
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_qwen3vl_full as qwen  # noqa: E402
from tensor_compare import rel_l2  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", default="/tmp/qwen_cmp/ours.safetensors")
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    f = safe_open(a.dump, "pt")
    shapes = json.loads(f.metadata()["config"])
    ids = f.get_tensor("token_ids")[None].cuda()
    ours = f.get_tensor("hidden")
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    outs = {}
    for dtype in (torch.bfloat16, torch.float32):
        model = qwen.build_model(shapes, a.layers, dtype, "cuda", a.seed, "sdpa", log)
        with torch.no_grad():
            outs[dtype] = model(input_ids=ids, use_cache=False).last_hidden_state[0].float().cpu()
        del model
        torch.cuda.empty_cache()
    print(json.dumps({"layers": a.layers, "transformers_bf16_vs_fp32": rel_l2(outs[torch.bfloat16], outs[torch.float32]),
                      "ours_vs_fp32": rel_l2(ours, outs[torch.float32]),
                      "ours_vs_bf16": rel_l2(ours, outs[torch.bfloat16])}))


if __name__ == "__main__":
    main()
