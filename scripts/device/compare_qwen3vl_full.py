#!/usr/bin/env python3
"""Orochi's GPU Qwen3-VL text stack vs transformers' Qwen3VLTextModel, full size (32B text config), bf16.

`orochi bench text --dump-outputs FILE` runs our stack (GpuTextEncoder) with counter-based random weights
of the real shapes and writes the token ids and the residual stream after --layers layers (f32 [L, 5120]).
This script builds transformers' Qwen3VLTextModel with --layers layers, fills every parameter with the
same numbers (regenerated from the seed with philox_torch.py under GpuTextEncoder::init_random's rules,
below), replaces the final norm with an identity (hidden_states[k] for k < num_hidden_layers is the
un-normed residual stream, which is what MiniMax-H3 reads and what we dump), runs the dumped ids and
reports the relative L2 of ours against it, and times transformers' forward.

Run on the device (see compare_qwen3vl_full.sh):
    python3 scripts/device/compare_qwen3vl_full.py --dump ours.safetensors [--bench-json bench.json]
On a CPU, to check the weight mapping on a tiny config (dump from a CPU run of qwen3vl::encode_text
with the same init rules; TINY below):
    python3 scripts/device/compare_qwen3vl_full.py --dump tiny.safetensors --tiny --device cpu --dtype f32

Prints one JSON line (also appended to $OUT/compare_qwen3vl.jsonl) and exits 1 unless rel L2 <= --tol.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from philox_torch import fill_normal_  # noqa: E402
from tensor_compare import rel_l2

# TextConfig::qwen3vl_32b() (src/models/qwen3vl/text_config.cpp), as the dump's "config" metadata spells it.
QWEN3VL_32B = dict(vocab_size=151936, hidden_size=5120, intermediate_size=25600, num_attention_heads=64,
                   num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6, rope_theta=5000000.0,
                   mrope_section=[24, 20, 20])
# The --tiny CPU check: 8 rotary slots, so the section is [24, 20, 20] scaled to [4, 2, 2].
TINY = dict(vocab_size=500, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, rms_norm_eps=1e-6, rope_theta=5000000.0, mrope_section=[4, 2, 2])

# GpuTextEncoder::init_random (src/models/qwen3vl/cuda/gpu_text_encoder.cpp): stream 0 is the embedding,
# then 10 streams per layer in this order. Norms 1 + N(0, 0.05), the embedding N(0, 1), matrices
# N(0, 0.5 / sqrt(fan_in)) computed in f32;
# "up_gate" is one [2 * intermediate, hidden] tensor with rows [up; gate].
LAYER_STREAMS = ("input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm",
                 "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "up_gate",
                 "mlp.down_proj")
NORM_INIT = (1.0, float(np.float32(0.05)))
EMBED_INIT = (0.0, 1.0)


def matrix_init(fan_in: int) -> tuple:
    return 0.0, float(np.float32(0.5) / np.sqrt(np.float32(fan_in)))


def transformers_config(shapes: dict, layers: int):
    from transformers import Qwen3VLTextConfig
    # The spelling of ../shared/bench/peer_h3_prepost.py and the released config.json (legacy rope_scaling).
    return Qwen3VLTextConfig(
        vocab_size=shapes["vocab_size"], hidden_size=shapes["hidden_size"],
        intermediate_size=shapes["intermediate_size"], num_hidden_layers=layers,
        num_attention_heads=shapes["num_attention_heads"], num_key_value_heads=shapes["num_key_value_heads"],
        head_dim=shapes["head_dim"], rms_norm_eps=shapes["rms_norm_eps"], rope_theta=shapes["rope_theta"],
        hidden_act="silu", attention_bias=False,
        rope_scaling={"rope_type": "default", "mrope_section": list(shapes["mrope_section"]),
                      "mrope_interleaved": True})


def build_model(shapes: dict, layers: int, dtype: torch.dtype, device, seed: int, attn: str, log):
    """transformers' Qwen3VLTextModel, allocated uninitialised, every parameter filled with our init."""
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextModel

    cfg = transformers_config(shapes, layers)
    cfg._attn_implementation = attn
    with torch.device("meta"):
        model = Qwen3VLTextModel(cfg)
    # The un-normed residual stream after the last layer: what hidden_states[layers] of the 64-layer model is.
    model.norm = torch.nn.Identity()
    model.to(dtype)
    model.to_empty(device=device)
    # to_empty left the rotary buffers uninitialised: rebuild them as the constructor computes them (f32, CPU).
    model.rotary_emb = type(model.rotary_emb)(config=model.config).to(device)

    params = dict(model.named_parameters())
    I = shapes["intermediate_size"]
    specs = [("embed_tokens", EMBED_INIT)]  # (our name, (mean, std)); the RNG stream is the index
    expected = {"embed_tokens.weight"}  # the transformers parameters those fill
    for i in range(layers):
        for name in LAYER_STREAMS:
            fan_in = {"self_attn.o_proj": shapes["num_attention_heads"] * shapes["head_dim"],
                      "mlp.down_proj": I}.get(name, shapes["hidden_size"])
            specs.append((f"layers.{i}.{name}", NORM_INIT if name.endswith("norm") else matrix_init(fan_in)))
            parts = ("mlp.up_proj", "mlp.gate_proj") if name == "up_gate" else (name,)
            expected |= {f"layers.{i}.{part}.weight" for part in parts}
    if set(params) != expected:
        raise SystemExit(f"parameter names differ: only transformers {sorted(set(params) - expected)[:8]}, "
                         f"only orochi {sorted(expected - set(params))[:8]}")
    t0 = time.perf_counter()
    with torch.no_grad():
        for stream, (name, (mean, std)) in enumerate(specs):
            if name.endswith("up_gate"):
                layer = name[: -len("up_gate")]
                up, gate = params[layer + "mlp.up_proj.weight"], params[layer + "mlp.gate_proj.weight"]
                fused = torch.empty((2 * I, shapes["hidden_size"]), dtype=up.dtype, device=up.device)
                fill_normal_(fused, seed, stream, mean, std)  # [2I, hidden]: rows [up; gate]
                up.copy_(fused[:I])
                gate.copy_(fused[I:])
                del fused
            else:
                fill_normal_(params[name + ".weight"].data, seed, stream, mean, std)
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    n = sum(p.numel() for p in params.values())
    log(f"filled {len(params)} parameters from {len(specs)} streams ({n / 1e9:.2f} B values) in "
        f"{time.perf_counter() - t0:.1f} s")
    return model.eval()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True, help="safetensors file written by `orochi bench text --dump-outputs`")
    ap.add_argument("--layers", type=int, help="must match bench's --layers (checked against the dump)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--tiny", action="store_true", help="TINY shapes (CPU check of the weight mapping)")
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--iters", type=int, default=5, help="timed transformers forwards (after one warm-up)")
    ap.add_argument("--attn", default="sdpa", help="transformers attention implementation")
    ap.add_argument("--bench-json", help="`orochi bench text --json` output of the same run, for the times side by side")
    a = ap.parse_args()
    log = lambda msg: print(f"[compare_qwen3vl] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    from safetensors import safe_open
    with safe_open(a.dump, framework="pt") as f:
        meta = f.metadata() or {}
        d = {k: f.get_tensor(k) for k in f.keys()}
    if meta.get("format") != "orochi-qwen3vl-text-dump-v1":
        raise SystemExit(f"{a.dump} is not an `orochi bench text --dump-outputs` file (metadata {meta})")
    layers, seed = int(meta["layers"]), int(meta["seed"])
    shapes = json.loads(meta["config"])
    want = TINY if a.tiny else QWEN3VL_32B
    if shapes != want:
        raise SystemExit(f"the dump's config {shapes} is not the {'tiny' if a.tiny else '32B'} one {want}")
    if a.layers is not None and a.layers != layers:
        raise SystemExit(f"--layers {a.layers} but the dump was made with --layers {layers}: rerun bench")
    ids, ours = d["token_ids"], d["hidden"]  # i64 [L], f32 [L, hidden]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = a.device
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    model = build_model(shapes, layers, dtype, dev, seed, a.attn, log)
    input_ids = ids.to(dev)[None]
    cuda = str(dev).startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def forward():
        return model(input_ids=input_ids, use_cache=False).last_hidden_state

    times = []
    with torch.no_grad():
        ref = forward()[0].float().cpu()  # also the warm-up
        for _ in range(a.iters):
            sync()
            t0 = time.perf_counter()
            forward()
            sync()
            times.append(time.perf_counter() - t0)
    times.sort()

    rel = rel_l2(ours, ref)
    finite = bool(torch.isfinite(ref).all() and torch.isfinite(ours).all())
    ok = finite and rel <= a.tol
    res = dict(check="qwen3vl_text_full_vs_transformers", tiny=a.tiny, layers=layers, seed=seed, tokens=int(ids.numel()),
               dtype=a.dtype, device=str(dev), attn=a.attn, rel_l2=rel, max_abs=float((ours - ref).abs().max()),
               ref_rms=float(ref.double().pow(2).mean().sqrt()), ours_rms=float(ours.double().pow(2).mean().sqrt()),
               transformers_forward_s_median=times[len(times) // 2], transformers_forward_s_min=times[0],
               transformers_forward_s_all=times, tol=a.tol, result="PASS" if ok else "FAIL")
    if a.bench_json:
        with open(a.bench_json) as fh:
            bench = json.loads(fh.read().strip().splitlines()[-1])
        res.update(orochi_encode_s_median=bench["encode_s_median"], orochi_encode_s_min=bench["encode_s_min"],
                   speedup_vs_transformers=res["transformers_forward_s_median"] / bench["encode_s_median"])
    if cuda:
        res["transformers_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(res), flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "compare_qwen3vl.jsonl"), "a") as fh:
            fh.write(json.dumps(res) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
