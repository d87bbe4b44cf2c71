#!/usr/bin/env python3
"""Golden generator for the MiniMax-H3 video VAE decoder (tiny config, fp32, CPU, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_video_vae.py --out tests/data/h3_video_vae

Writes into --out:
  vae/                 diffusers `save_pretrained` output of a tiny `AutoencoderKLMiniMaxH3` with random weights
                       (config.json + diffusion_pytorch_model.safetensors; the encoder weights are in it too)
  golden.safetensors   inputs, per-stage activations and outputs of `vae.decode` plus the pipeline's pixel step:
    a.*   T = 7 latent frames (one temporal chunk), 4x5 latents, default tiling (256 px: one tile)
    b.*   T = 12 latent frames (two chunks), 5x7 latents, tiling forced small (tile 12x16 px, min overlap 4x8 px):
          3 x 2 tiles per chunk with overlaps 4 (height) and 12, 8 (width)
    blend.<dtype>.<extent>.*   the reference `_blend` on random data in fp32 / fp16 / bf16
    split.<len>.*              the reference `_split_tiles` for real canvas sizes (ratio 16, tile 256, overlap 64)

Precision: pure fp32, no autocast (the released pipeline decodes under reduced precision; see MODELS_H3.md section 4).
The model comes from diffusers on PyPI, unmodified; nothing here copies its code.
"""

import argparse
import json
import math
import shutil
import types
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import diffusers
import safetensors
from diffusers import AutoencoderKLMiniMaxH3
from safetensors.torch import load_file

from golden_io import canonicalize_header, print_sizes, save_golden


SEED = 20260824

# MODELS_H3.md section 9's tiny video VAE, except the decoder head dim: 16 instead of 8, so that RoPE rotates
# 12 channels with 2 frequencies per axis (with 8 there is a single frequency, inv_freq = [1], which would not test
# the 100^(-j/F) ladder).
CONFIG = dict(
    latent_channels=4,
    block_out_channels=(8, 16),
    layers_per_block=1,
    spatial_downsample_factors=(2, 2),
    temporal_downsample_factors=(2, 2),
    norm_num_groups=8,
    decoder_num_layers=2,
    decoder_num_attention_heads=2,
    decoder_attention_head_dim=16,
    decoder_num_register_tokens=2,
    decoder_ffn_mult=2,
    clip_length=17,
    token_drop=3,
    latents_mean=(0.1, -0.2, 0.05, 0.3),
    latents_std=(0.9, 1.3, 0.7, 1.1),
)

CASE_A = dict(frames=7, height=4, width=5)  # one chunk, one tile
CASE_B = dict(frames=12, height=5, width=7)  # two chunks, 2 x 3 tiles each
TILING_B = dict(
    tile_sample_min_height=12,
    tile_sample_min_width=16,
    tile_sample_min_overlap_height=4,
    tile_sample_min_overlap_width=8,
)
PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)


def randomize_(model: nn.Module, gen: torch.Generator) -> None:
    """Every parameter gets a non-trivial random value (the default init zeroes LayerScale and the registers)."""
    norm_weights = set()
    for mname, module in model.named_modules():
        if isinstance(module, (nn.RMSNorm, nn.LayerNorm, nn.GroupNorm)) and module.weight is not None:
            norm_weights.add(f"{mname}.weight")
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name in norm_weights:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith((".scale1", ".scale2")):
                p.copy_(0.5 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("register_tokens"):
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))


def denormalize(vae, latents):
    """The pipeline's decode step (modular_pipelines/minimax_h3/decoders.py): latents * std + mean."""
    mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    return latents * std + mean


def to_pixels(video):
    """The pipeline's pixel step: undo the ImageNet normalization and clamp to [0, 1]."""
    mean = torch.tensor(PIXEL_MEAN).view(1, -1, 1, 1, 1)
    std = torch.tensor(PIXEL_STD).view(1, -1, 1, 1, 1)
    return (video.float() * std + mean).clamp(0, 1)


def capture_decode(vae, latents, prefix: str) -> dict:
    """vae.decode with hooks: stages of the FIRST decoder call (chunk 0, tile (0, 0)) and every stitched clip."""
    cap = {}
    dec = vae.decoder
    handles = []

    def first(name, fn=lambda o: o):
        def hook(_module, _args, output):
            if prefix + name not in cap:
                cap[prefix + name] = fn(output).detach().clone()
        return hook

    handles.append(vae.post_quant_conv.register_forward_hook(first("post_quant_conv")))
    handles.append(dec.proj_in.register_forward_hook(first("proj_in")))

    def tokens_hook(_m, args, kwargs):
        if prefix + "tokens" not in cap:
            cap[prefix + "tokens"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    handles.append(dec.transformer_blocks[0].register_forward_pre_hook(tokens_hook, with_kwargs=True))

    def rope_hook(_m, _a, output):
        if prefix + "rope.cos" not in cap:
            # [1, S, 1, R] -> [S, R]
            cap[prefix + "rope.cos"], cap[prefix + "rope.sin"] = (o[0, :, 0].detach().clone() for o in output)

    handles.append(dec.rope.register_forward_hook(rope_hook))
    for i, blk in enumerate(dec.transformer_blocks):
        handles.append(blk.register_forward_hook(first(f"block.{i}")))
    handles.append(dec.norm_out.register_forward_hook(first("norm_out")))
    handles.append(dec.proj_out.register_forward_hook(first("proj_out")))  # dropped before saving (size)
    handles.append(dec.register_forward_hook(first("tile")))

    clips = []
    original = vae._decode_clip

    def decode_clip(z):
        out = original(z)
        clips.append(out.detach().clone())
        return out

    vae._decode_clip = decode_clip
    try:
        with torch.no_grad():
            video = vae.decode(latents, return_dict=False)[0]
    finally:
        del vae._decode_clip
        for h in handles:
            h.remove()
    cap[prefix + "video"] = video.detach().clone()
    for i, c in enumerate(clips):
        cap[prefix + f"clip.{i}"] = c
    return cap


def spec_assemble(clips):
    """Independent check of MODELS_H3.md section 4's temporal assembly (fp32 here: the blend runs in the clip dtype)."""
    heads = [c[:, :, 3:20] for c in clips]
    tails = [c[:, :, 23:28] for c in clips]
    wb = torch.arange(5, dtype=torch.float32) / 5
    wa = 1 - wb
    out = [heads[0]]
    for i in range(1, len(clips)):
        blended = tails[i - 1] * wa.view(1, 1, 5, 1, 1) + heads[i][:, :, :5] * wb.view(1, 1, 5, 1, 1)
        out += [blended, heads[i][:, :, 5:]]
    out.append(tails[-1])
    return torch.cat(out, dim=2)


def blend_cases(vae, gen) -> dict:
    out = {}
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")):
        for extent in (5, 8, 12, 80, 144, 300):  # 300: bf16 rounds the positions themselves
            a = torch.randn((2, extent + 3, 3), generator=gen).to(dtype)
            b = torch.randn((2, extent + 4, 3), generator=gen).to(dtype)
            res = vae._blend(a, b, extent, dim=1)
            assert res.dtype == dtype and res.shape == b.shape
            for key, t in (("a", a), ("b", b), ("out", res)):
                out[f"blend.{name}.{extent}.{key}"] = t.float()  # exact: every value is representable
    return out


def split_cases() -> dict:
    """The reference tile layout at the released geometry (ratio 16, tile 256 px, overlap >= 64 px)."""
    fake = types.SimpleNamespace(spatial_compression_ratio=16)
    out = {}
    for length in (480, 768, 832, 1344, 256, 272, 100):
        starts, lengths, overlaps = AutoencoderKLMiniMaxH3._split_tiles(fake, length, 256, 64)
        out[f"split.{length}.starts"] = torch.tensor(starts, dtype=torch.int64)
        out[f"split.{length}.lengths"] = torch.tensor(lengths, dtype=torch.int64)
        out[f"split.{length}.overlaps"] = torch.tensor(overlaps if overlaps else [-1], dtype=torch.int64)
    # MODELS_H3.md section 4's worked examples.
    assert out["split.832.starts"].tolist() == [0, 192, 384, 576]
    assert out["split.480.starts"].tolist() == [0, 112, 224] and out["split.480.overlaps"].tolist() == [144, 144]
    assert out["split.1344.overlaps"].tolist() == [80, 80, 80, 80, 64, 64]
    assert out["split.768.overlaps"].tolist() == [96, 80, 80]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if (out / "vae").exists():
        shutil.rmtree(out / "vae")

    vae = AutoencoderKLMiniMaxH3(**CONFIG).eval()
    randomize_(vae, torch.Generator().manual_seed(SEED))
    assert all(p.dtype == torch.float32 for p in vae.parameters())
    assert (vae.frame_pre_padding, vae.tokens_chunk_size, vae.token_overlap, vae.frame_overlap) == (3, 5, 2, 5)
    vae.save_pretrained(out / "vae", safe_serialization=True)
    weights_file = out / "vae" / "diffusion_pytorch_model.safetensors"
    canonicalize_header(weights_file)
    sd = {k: v.detach() for k, v in vae.state_dict().items()}
    reloaded = load_file(weights_file)
    assert set(reloaded) == set(sd) and all(torch.equal(reloaded[k], sd[k]) for k in sd)

    gen = torch.Generator().manual_seed(SEED + 1)
    golden = {}
    for prefix, case in (("a.", CASE_A), ("b.", CASE_B)):
        latents = torch.randn((1, CONFIG["latent_channels"], case["frames"], case["height"], case["width"]),
                              generator=gen)
        if prefix == "b.":
            vae.enable_tiling(**TILING_B)
        else:
            vae.enable_tiling(256, 256, 64, 64)  # the shipped default, here larger than the canvas: one tile
        cap = capture_decode(vae, denormalize(vae, latents), prefix)
        cap[prefix + "latents"] = latents
        cap[prefix + "pixels"] = to_pixels(cap[prefix + "video"])
        assert torch.equal(spec_assemble([cap[k] for k in sorted(cap) if k.startswith(prefix + "clip.")]),
                           cap[prefix + "video"]), "MODELS_H3.md temporal assembly disagrees with the reference"
        golden.update(cap)

    n_chunks_b = sum(1 for k in golden if k.startswith("b.clip."))
    assert n_chunks_b == 2 and "a.clip.0" in golden and "a.clip.1" not in golden
    assert golden["a.video"].shape == (1, 3, 22, 16, 20) and golden["b.video"].shape == (1, 3, 39, 20, 28)
    assert golden["b.tile"].shape == (1, 3, 28, 12, 16), golden["b.tile"].shape
    # The untiled reference gives a different video once tiles are on: the tiling must matter.
    vae.disable_tiling()
    with torch.no_grad():
        untiled = vae.decode(denormalize(vae, golden["b.latents"]), return_dict=False)[0]
    assert (untiled - golden["b.video"]).abs().max() > 1e-2
    # Blocks change the state; outputs are not trivially small; the clamp bites somewhere but not everywhere.
    for p in ("a.", "b."):
        prev = golden[p + "tokens"]
        for i in range(CONFIG["decoder_num_layers"]):
            cur = golden[p + f"block.{i}"]
            assert ((cur - prev).abs().max() / prev.abs().max()).item() > 1e-2
            prev = cur
        px = golden[p + "pixels"]
        frac = ((px == 0) | (px == 1)).float().mean().item()
        print(f"{p} video mean|x|={golden[p + 'video'].abs().mean():.3f} clamped fraction={frac:.3f}")
        assert 0.0 < frac < 0.3

    golden.update(blend_cases(vae, gen))
    golden.update(split_cases())
    # Kept small (< 1.5 MB): the second clip of b is covered by b.video, a's single tile is its clip, proj_out is the
    # tile before unpatchify, and b's pixels follow from b.video as a's do from a.video.
    assert torch.equal(golden["a.tile"], golden["a.clip.0"])
    for k in ("b.clip.1", "a.tile", "a.proj_out", "b.proj_out", "b.pixels"):
        del golden[k]
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "config": json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in dict(vae.config).items()
                              if not k.startswith("_")}, sort_keys=True),
        "tiling_b": json.dumps(TILING_B, sort_keys=True),
        "tiling_a": json.dumps(dict(tile_sample_min_height=256, tile_sample_min_width=256,
                                    tile_sample_min_overlap_height=64, tile_sample_min_overlap_width=64)),
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "safetensors_version": safetensors.__version__,
        "numpy_version": np.__version__,
        "seed": str(SEED),
        "dtype": "float32, no autocast",
        "captures": "per-stage tensors are those of the first decoder call (chunk 0, tile (0,0)); "
                    "<case>.clip.<i> is chunk i's stitched clip before the temporal blend",
    }
    save_golden(out / "golden.safetensors", golden, meta)

    print_sizes(out)


if __name__ == "__main__":
    main()
