#!/usr/bin/env python3
"""A random diffusers-format LoRA for MiniMax-H3's released transformer shapes (for device checks:
`orochi bench dit --lora FILE` against compare_h3_full.py --lora FILE on the same random weights).

Ranks: --rank-attn for attn.to_q/to_k/to_v/to_out.0, --rank-ffn for ff.net.0.proj/ff.net.2, in every
one of --layers blocks. A ~ N(0, 1/sqrt(in)), B ~ N(0, 0.2/sqrt(rank)) (seeded torch CPU generator): a
delta about a quarter of the random weights' size (their std is 0.8/sqrt(in)). No alpha (scale 1).
    python3 scripts/device/make_random_lora.py --layers 50 --out /tmp/lora.safetensors
"""
import argparse
import inspect
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def released_config() -> dict:
    from diffusers import MiniMaxH3Transformer3DModel
    sig = inspect.signature(MiniMaxH3Transformer3DModel.__init__)
    return {k: v.default for k, v in sig.parameters.items() if v.default is not inspect.Parameter.empty}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--rank-attn", type=int, default=64)
    ap.add_argument("--rank-ffn", type=int, default=16)
    ap.add_argument("--seed", type=int, default=64)
    a = ap.parse_args()
    cfg = released_config()
    H, inner, F = cfg["hidden_size"], cfg["num_attention_heads"] * cfg["attention_head_dim"], cfg["ffn_dim"]
    g = torch.Generator().manual_seed(a.seed)
    tensors = {}
    for i in range(a.layers):
        p = f"transformer.transformer_blocks.{i}."
        shapes = {"attn.to_q": (H, inner, a.rank_attn), "attn.to_k": (H, inner, a.rank_attn),
                  "attn.to_v": (H, inner, a.rank_attn), "attn.to_out.0": (inner, H, a.rank_attn),
                  "ff.net.0.proj": (H, 2 * F, a.rank_ffn), "ff.net.2": (F, H, a.rank_ffn)}
        for module, (fan_in, fan_out, r) in shapes.items():
            tensors[p + module + ".lora_A.weight"] = torch.randn(r, fan_in, generator=g) / fan_in ** 0.5
            tensors[p + module + ".lora_B.weight"] = torch.randn(fan_out, r, generator=g) * (0.2 / r ** 0.5)
    save_file(tensors, a.out)
    n = sum(t.numel() for t in tensors.values())
    print(f"[make_random_lora] {len(tensors) // 2} pairs, {n / 1e6:.1f} M values -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
