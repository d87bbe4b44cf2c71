#!/usr/bin/env python3
"""Orochi's GPU H3 denoiser forward vs diffusers' MiniMaxH3Transformer3DModel, full size, bf16.

`orochi bench dit --dump-outputs FILE` runs our forward with random weights of the real shapes and
writes the request (rows, layout, timesteps) and its video/audio outputs to FILE. This script builds
diffusers' model with the same weights, regenerated here from the same counter-based RNG
(src/core/random.cpp: Philox4x32-10 + Box-Muller, ported to torch integer math in philox_torch.py) under the
same per-parameter rules as src/models/h3/cuda/gpu_weights.cpp, runs diffusers' forward on the dumped
request and reports the relative L2 of both outputs against ours.

Run on the device (see compare_h3_full.sh):
    python3 scripts/device/compare_h3_full.py --dump ours_480p.safetensors --res 480p [--layers 2]
On a CPU, to catch API errors on a tiny model (dump from a tiny-config run of our CPU forward):
    python3 scripts/device/compare_h3_full.py --dump tiny.safetensors --device cpu --tiny --dtype f32

Prints one JSON line (also appended to $OUT/compare_h3.jsonl) and exits 1 unless both rel L2 <= --tol.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

# Counter-based N(0, 1), bit for bit as src/core/random.cpp (up to the last ulp of log/sin/cos).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from philox_torch import fill_normal_, normal_tensor  # noqa: E402
from tensor_compare import rel_l2


# ---- The parameter list and random init of src/models/h3/{parameters.cpp, cuda/gpu_weights.cpp} ----

F32_ISLANDS = ("proj_in.", "audio_proj_in.", "time_embedder.", "proj_out.", "audio_proj_out.")


def h3_parameter_specs(cfg: dict) -> list:
    """(name, shape) in h3_parameters() order: a parameter's RNG stream is its index here."""
    H, inner, hd = cfg["hidden_size"], cfg["num_attention_heads"] * cfg["attention_head_dim"], cfg["attention_head_dim"]
    F, T = cfg["ffn_dim"], cfg["time_embed_dim"]
    patch = cfg["in_channels"] * int(np.prod(cfg["patch_size"]))
    out = []

    def linear(name, fan_in, fan_out, bias):
        out.append((name + ".weight", (fan_out, fan_in)))
        if bias:
            out.append((name + ".bias", (fan_out,)))

    def block_body(p):
        out.append((p + "norm1.weight", (H,)))
        for proj in ("to_q", "to_k", "to_v"):
            linear(p + "attn." + proj, H, inner, False)
        out.append((p + "attn.norm_q.weight", (hd,)))
        out.append((p + "attn.norm_k.weight", (hd,)))
        linear(p + "attn.to_out.0", inner, H, False)
        out.append((p + "norm2.weight", (H,)))
        linear(p + "ff.net.0.proj", H, 2 * F, False)
        linear(p + "ff.net.2", F, H, False)

    linear("proj_in", patch, H, True)
    linear("audio_proj_in", cfg["audio_in_channels"], H, True)
    linear("context_embedder", cfg["text_dim"], H, True)
    linear("time_embedder.linear_1", cfg["freq_dim"], cfg["time_embed_hidden_dim"], True)
    linear("time_embedder.linear_2", cfg["time_embed_hidden_dim"], T, True)
    for i in range(cfg["num_refiner_layers"]):
        block_body(f"token_refiner.refiner_blocks.{i}.")
    out.append(("token_refiner.final_norm.weight", (H,)))
    for i in range(cfg["num_layers"]):
        block_body(f"transformer_blocks.{i}.")
        linear(f"transformer_blocks.{i}.adaln_proj.linear", T, 6 * 3 * H, True)
    out.append(("norm_out.norm.weight", (H,)))
    linear("norm_out.linear", T, 2 * H, True)
    linear("proj_out", H, patch, True)
    linear("audio_proj_out", H, cfg["audio_in_channels"], True)
    return out


def random_init(name: str, shape) -> tuple:
    """(mean, std) of a parameter, in f32 arithmetic as gpu_weights.cpp computes them: norms
    1 + N(0, 0.1), biases N(0, 0.05), matrices (AdaLN included) N(0, 0.2 / sqrt(fan_in / 16))."""
    is_adaln = "adaln_proj" in name or "norm_out.linear" in name
    if not is_adaln and "norm" in name:
        return 1.0, float(np.float32(0.1))
    if name.endswith(".bias"):
        return 0.0, float(np.float32(0.05))
    assert len(shape) == 2, name
    scale = np.float32(1.0) / np.sqrt(np.float32(shape[1]) / np.float32(16.0))
    return 0.0, float(np.float32(0.2) * np.float32(scale))


TINY = dict(num_attention_heads=2, attention_head_dim=16, hidden_size=32, num_layers=4, num_refiner_layers=2,
            ffn_dim=64, in_channels=4, audio_in_channels=8, text_dim=16, freq_dim=16, time_embed_hidden_dim=32,
            time_embed_dim=16, rope_freq_dim=2)  # H3Config::tiny_demo()


def build_model(cfg: dict, dtype: torch.dtype, device, seed: int, log) -> torch.nn.Module:
    """diffusers' model, allocated uninitialised, then every parameter filled with our init."""
    from diffusers import MiniMaxH3Transformer3DModel
    from diffusers.models.transformers.transformer_minimax_h3 import MiniMaxH3RotaryPosEmbed

    with torch.device("meta"):
        model = MiniMaxH3Transformer3DModel(**cfg)
    torch.nn.Module.to(model, dtype)  # ModelMixin.to() warns about the islands, which are restored next
    if dtype != torch.float32:  # the checkpoint's f32 islands, as diffusers' _keep_in_fp32_modules loads them
        for name in model._keep_in_fp32_modules:
            getattr(model, name).to(torch.float32)
    model.to_empty(device=device)
    model.rope.inv_freq.copy_(MiniMaxH3RotaryPosEmbed(cfg.get("rope_freq_dim", 16),
                                                      cfg.get("rope_theta", 10000.0)).inv_freq)
    full_cfg = dict(model.config)
    specs = h3_parameter_specs(full_cfg)
    params = dict(model.named_parameters())
    ours = {name for name, _ in specs}
    if set(params) != ours:
        raise SystemExit(f"parameter names differ: only diffusers {sorted(set(params) - ours)[:8]}, "
                         f"only orochi {sorted(ours - set(params))[:8]}")
    t0 = time.perf_counter()
    with torch.no_grad():
        for stream, (name, shape) in enumerate(specs):
            p = params[name]
            if tuple(p.shape) != tuple(shape):
                raise SystemExit(f"{name}: diffusers shape {tuple(p.shape)}, orochi {shape}")
            if dtype != torch.float32:
                want = torch.float32 if name.startswith(F32_ISLANDS) else torch.bfloat16
                if p.dtype != want:
                    raise SystemExit(f"{name}: diffusers keeps it {p.dtype}, orochi's GPU weights are {want}")
            mean, std = random_init(name, shape)
            fill_normal_(p.data, seed, stream, mean, std)
    if device != "cpu" and torch.cuda.is_available():
        torch.cuda.synchronize()
    n = sum(p.numel() for p in params.values())
    log(f"filled {len(specs)} parameters ({n / 1e9:.2f} B values) in {time.perf_counter() - t0:.1f} s")
    return model.eval()


def add_unmerged_lora(model: torch.nn.Module, path: str, strength: float, log) -> int:
    """PEFT's unmerged LoRA on every pair of a diffusers-format file (transformer.<module>.lora_A/B.weight,
    no alpha: scale 1): each target Linear's output gets strength * B(A x), computed in the layer's dtype."""
    from safetensors.torch import load_file
    pairs = {}
    for key, t in load_file(path).items():
        if not key.startswith("transformer.") or not key.endswith((".lora_A.weight", ".lora_B.weight")):
            raise SystemExit(f"{path}: {key} is not a diffusers-format transformer LoRA key")
        module, kind = key[len("transformer."):].rsplit(".lora_", 1)
        pairs.setdefault(module, {})[kind[0]] = t
    modules = dict(model.named_modules())
    for module, ab in pairs.items():
        layer = modules.get(module)
        if not isinstance(layer, torch.nn.Linear):
            raise SystemExit(f"{path}: {module} is not a linear layer of diffusers' model")
        w = layer.weight
        A, B = ab["A"].to(w.device, w.dtype), ab["B"].to(w.device, w.dtype)

        def hook(mod, inputs, output, A=A, B=B):
            x = inputs[0].to(A.dtype)
            return output + (strength * torch.nn.functional.linear(torch.nn.functional.linear(x, A), B)).to(output.dtype)

        layer.register_forward_hook(hook)
    log(f"LoRA {path}: {len(pairs)} pairs applied unmerged at strength {strength}")
    return len(pairs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True, help="safetensors file written by `orochi bench dit --dump-outputs`")
    ap.add_argument("--res", choices=("480p", "768p"), help="must match the dump (checked)")
    ap.add_argument("--layers", type=int, help="must match bench's --layers (checked against the dump)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--tiny", action="store_true", help="H3Config::tiny_demo() shapes (CPU check of this script)")
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--backend", default=None, help="diffusers attention backend, e.g. _native_cudnn")
    ap.add_argument("--lora", default=None, help="a diffusers-format LoRA file (make_random_lora.py), applied "
                    "unmerged as PEFT runs it: base(x) + strength * B(A x) in the layer's dtype")
    ap.add_argument("--lora-strength", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=0, help="untimed forwards before the timed ones")
    ap.add_argument("--iters", type=int, default=1, help="timed forwards (median reported; outputs from the last)")
    a = ap.parse_args()
    log = lambda msg: print(f"[compare_h3] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    from safetensors import safe_open
    with safe_open(a.dump, framework="pt") as f:
        meta = f.metadata() or {}
        d = {k: f.get_tensor(k) for k in f.keys()}
    if meta.get("format") != "orochi-h3-forward-dump-v1":
        raise SystemExit(f"{a.dump} is not an `orochi bench dit --dump-outputs` file (metadata {meta})")
    layers, seed = int(meta["layers"]), int(meta["seed"])
    if a.layers is not None and a.layers != layers:
        raise SystemExit(f"--layers {a.layers} but the dump was made with --layers {layers}: rerun bench")
    if a.res is not None and not a.tiny and a.res != meta.get("res"):
        raise SystemExit(f"--res {a.res} but the dump is {meta.get('res')}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = a.device
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    # Our RNG port against the C++ one on the dumped input rows (streams 1..3 of the same seed).
    rng_diff = 0.0
    for key, stream in (("video_in", 1), ("audio_in", 2), ("text_in", 3)):
        regen = normal_tensor(tuple(d[key].shape), seed, stream, dev).cpu()
        rng_diff = max(rng_diff, float((regen - d[key]).abs().max()))
    log(f"RNG port vs the dumped inputs: max |diff| {rng_diff:.3g}")

    cfg = dict(TINY) if a.tiny else {}
    cfg["num_layers"] = layers
    model = build_model(cfg, dtype, dev, seed, log)
    if a.backend:
        model.set_attention_backend(a.backend)
    lora_pairs = add_unmerged_lora(model, a.lora, a.lora_strength, log) if a.lora else 0

    to = lambda k: d[k].to(dev)  # noqa: E731
    inputs = dict(hidden_states=to("video_in")[None], audio_hidden_states=to("audio_in")[None],
                  encoder_hidden_states=to("text_in")[None], timestep=to("timesteps"),
                  timestep_indices=to("timestep_indices"), token_tags=to("token_tags"), position_ids=to("positions"),
                  video_indices=to("video_indices"), audio_indices=to("audio_indices"),
                  text_indices=to("text_indices"), return_dict=False)
    times = []
    for i in range(max(0, a.warmup) + max(1, a.iters)):
        if dev != "cpu" and torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            video, audio = model(**inputs)
        if dev != "cpu" and torch.cuda.is_available():
            torch.cuda.synchronize()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
        log(f"diffusers forward {i + 1}: {time.perf_counter() - t0:.3f} s{' (warm-up)' if i < a.warmup else ''}")
    video, audio = video[0].float().cpu(), audio[0].float().cpu()
    forward_s = float(np.median(times))

    rv, ra = rel_l2(d["video_out"], video), rel_l2(d["audio_out"], audio)
    ok = rv <= a.tol and ra <= a.tol and bool(torch.isfinite(video).all() and torch.isfinite(audio).all())
    res = dict(check="h3_full_vs_diffusers", res=meta.get("res"), tiny=a.tiny, layers=layers, seed=seed,
               dtype=a.dtype, device=str(dev), seq=int(d["positions"].shape[0]), video_rows=int(video.shape[0]),
               audio_rows=int(audio.shape[0]), rel_l2_video=rv, rel_l2_audio=ra,
               max_abs_video=float((d["video_out"] - video).abs().max()),
               max_abs_audio=float((d["audio_out"] - audio).abs().max()),
               ref_rms_video=float(video.double().pow(2).mean().sqrt()),
               ref_rms_audio=float(audio.double().pow(2).mean().sqrt()),
               rng_max_abs_diff=rng_diff, diffusers_forward_s=forward_s,
               diffusers_forward_s_all=times, backend=a.backend, tol=a.tol, result="PASS" if ok else "FAIL")
    if a.lora:
        res.update(lora=a.lora, lora_strength=a.lora_strength, lora_pairs=lora_pairs,
                   orochi_loras=json.loads(meta.get("loras", "[]")))
    print(json.dumps(res), flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "compare_h3.jsonl"), "a") as fh:
            fh.write(json.dumps(res) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
