#!/usr/bin/env python3
"""Golden generator for the MiniMax-H3 video VAE *encoder* and the pipeline's encode recipe (tiny config, fp32, CPU).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_video_vae_encoder.py --out tests/data/h3_video_vae_encoder

The reference is diffusers' `AutoencoderKLMiniMaxH3.encode` and the modular pipeline's `encode_vae_condition`
(modular_pipelines/minimax_h3/encoders.py): uint8 pixels -> ImageNet normalization -> encode (tiled 17-frame clips)
-> posterior sampled with a fresh CPU generator seeded 42 -> fp16 round trip -> (z - latents_mean) / latents_std.

Writes into --out:
  vae/                 `save_pretrained` of a tiny AutoencoderKLMiniMaxH3 with random weights (encoder and decoder)
  golden.safetensors   for each case, the inputs, the per-block outputs of the FIRST encoder call (clip 0, tile (0,0)),
                       the stitched clip moments, the whole moments, the seed-42 noise and the final latents:
    img.*    one frame 32x24 px (the single-frame path), one tile
    vid.*    22 frames 16x24 px: padded to 34, two 17-frame clips, the last 3 latents dropped -> 7
    big.*    one frame 288x272 px at the released tiling (256 px tiles, 64 px minimum overlap): 2 x 2 tiles
    tvid.*   22 frames 40x32 px with small tiles (24 px, overlap >= 8): 2 x 2 tiles per clip
    noise.*  torch.randn under a fresh Generator().manual_seed(42) for the shapes the engine draws (small ones
             whole, release-size ones at strided indices plus the tail), with torch's AVX2 kernels
    noise_scalar.*  the same draws with ATEN_CPU_CAPABILITY=default (torch's scalar normal_fill, which AVX-512
             hosts run too; REF2VA.md U6), made in a subprocess
  big and tvid pixels are not stored: they are the integer pattern `pattern_pixels` (the C++ test makes the same).

Tiny config: MODELS_H3.md section 9's video VAE widened to four encoder levels so that every kind of level is covered
(spatial-only downsampler, spatial+temporal ones, a level without downsampler, a resnet with and without shortcut);
the decoder is minimal (the decoder golden covers it). Precision: pure fp32, no autocast, one thread.
The model comes from diffusers on PyPI, unmodified; nothing here copies its code.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import diffusers
import safetensors
from diffusers import AutoencoderKLMiniMaxH3
from diffusers.modular_pipelines.minimax_h3.encoders import encode_vae_condition
from safetensors.torch import load_file, save_file

from golden_io import canonicalize_header, print_sizes, save_golden


SEED = 20261201
PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)

CONFIG = dict(
    latent_channels=4,
    block_out_channels=(8, 8, 16, 16),
    layers_per_block=1,
    spatial_downsample_factors=(2, 2, 2, 1),
    temporal_downsample_factors=(1, 2, 2, 1),
    norm_num_groups=4,
    decoder_num_layers=1,
    decoder_num_attention_heads=2,
    decoder_attention_head_dim=8,
    decoder_num_register_tokens=2,
    decoder_ffn_mult=2,
    clip_length=17,
    token_drop=3,
    latents_mean=(0.1, -0.2, 0.05, 0.3),
    latents_std=(0.9, 1.3, 0.7, 1.1),
)

DEFAULT_TILING = dict(tile_sample_min_height=256, tile_sample_min_width=256,
                      tile_sample_min_overlap_height=64, tile_sample_min_overlap_width=64)
SMALL_TILING = dict(tile_sample_min_height=24, tile_sample_min_width=24,
                    tile_sample_min_overlap_height=8, tile_sample_min_overlap_width=8)

# Shapes of the seed-42 draw: [1, 24, T, h, w] at release sizes, and tiny ones (n < 16 takes torch's serial path).
NOISE_SHAPES = {
    "img3648x2048": (1, 24, 1, 128, 228),
    "img2048": (1, 24, 1, 128, 128),
    "key832x480": (1, 24, 1, 30, 52),
    "vid124f1344x768": (1, 24, 37, 48, 84),
    "vid107f1344x768": (1, 24, 32, 48, 84),
    "n12": (1, 4, 1, 1, 3),
    "n16": (1, 4, 1, 2, 2),
    "n17": (17,),
    "n20": (1, 4, 1, 1, 5),
    "n1000": (1, 4, 2, 5, 25),
    "big": (1, 4, 1, 36, 34),
}
NOISE_FULL_LIMIT = 1024  # store every value up to this many, else ~500 strided ones plus the last 64


def pattern_pixels(frames: int, height: int, width: int) -> torch.Tensor:
    """uint8 [1, 3, F, H, W]: (7x + 13y + 71c + 29f + (x*y mod 31)) mod 256, exact integer arithmetic."""
    c = torch.arange(3).view(3, 1, 1, 1)
    f = torch.arange(frames).view(1, frames, 1, 1)
    y = torch.arange(height).view(1, 1, height, 1)
    x = torch.arange(width).view(1, 1, 1, width)
    v = (7 * x + 13 * y + 71 * c + 29 * f + (x * y) % 31) % 256
    return v.to(torch.uint8).unsqueeze(0)


def randomize_(model: nn.Module, gen: torch.Generator) -> None:
    """Every parameter random and non-trivial (GroupNorm weights near 1, small biases)."""
    norm_weights = set()
    for mname, module in model.named_modules():
        if isinstance(module, (nn.RMSNorm, nn.LayerNorm, nn.GroupNorm)) and module.weight is not None:
            norm_weights.add(f"{mname}.weight")
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name in norm_weights:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith((".scale1", ".scale2", "register_tokens")):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p[0].numel() if p.ndim > 1 else 1
                p.copy_(torch.randn(p.shape, generator=gen) * (1.5 / fan_in) ** 0.5)


def normalized(pixels_u8: torch.Tensor) -> torch.Tensor:
    """encode_vae_condition's first line: (u8.float() / 255 - mean) / std."""
    mean = torch.tensor(PIXEL_MEAN).view(1, -1, 1, 1, 1)
    std = torch.tensor(PIXEL_STD).view(1, -1, 1, 1, 1)
    return (pixels_u8.to(torch.float32).div(255.0) - mean) / std


def capture_encode(vae, pixels_u8, prefix: str, keep_blocks) -> dict:
    """encode_vae_condition with hooks: the blocks of the first encoder call, every stitched clip, the moments."""
    cap = {}
    enc = vae.encoder
    handles = []

    def first(name):
        def hook(_module, _args, output):
            if prefix + name not in cap and keep_blocks(name):
                cap[prefix + name] = output.detach().clone()
        return hook

    handles.append(enc.conv_in.register_forward_hook(first("conv_in")))
    for i, blk in enumerate(enc.down_blocks):
        for j, res in enumerate(blk.resnets):
            handles.append(res.register_forward_hook(first(f"down.{i}.resnet.{j}")))
        if blk.downsamplers is not None:
            handles.append(blk.downsamplers[0].register_forward_hook(first(f"down.{i}.downsample")))
    handles.append(enc.norm_out.register_forward_hook(first("norm_out")))
    handles.append(enc.conv_out.register_forward_hook(first("conv_out")))
    handles.append(vae.quant_conv.register_forward_hook(first("tile_moments")))

    clips = []
    original_clip = vae._encode_clip

    def encode_clip(x):
        out = original_clip(x)
        clips.append(out.detach().clone())
        return out

    original_encode = vae._encode
    moments = []

    def encode(x):
        out = original_encode(x)
        moments.append(out.detach().clone())
        return out

    vae._encode_clip = encode_clip
    vae._encode = encode
    try:
        with torch.no_grad():
            latents = encode_vae_condition(vae, pixels_u8, PIXEL_MEAN, PIXEL_STD, 42)
    finally:
        del vae._encode_clip
        del vae._encode
        for h in handles:
            h.remove()
    assert len(moments) == 1
    cap[prefix + "moments"] = moments[0]
    for i, c in enumerate(clips):
        cap[prefix + f"clip.{i}"] = c
    shape = moments[0][:, : CONFIG["latent_channels"]].shape
    cap[prefix + "noise"] = torch.randn(shape, generator=torch.Generator().manual_seed(42))
    cap[prefix + "latents"] = latents
    # The recipe restated from REF2VA.md section 1.3 (clamp, exp, sample, fp16, normalize) must give the same bits.
    mean, logvar = moments[0].chunk(2, dim=1)
    z = mean + torch.exp(0.5 * logvar.clamp(-30.0, 20.0)) * cap[prefix + "noise"]
    lm = torch.tensor(CONFIG["latents_mean"]).view(1, -1, 1, 1, 1)
    ls = torch.tensor(CONFIG["latents_std"]).view(1, -1, 1, 1, 1)
    assert torch.equal((z.half().float() - lm) / ls, latents), "REF2VA.md section 1.3 disagrees with the pipeline"
    return cap


def noise_cases(prefix: str = "noise.") -> dict:
    out = {}
    for name, shape in NOISE_SHAPES.items():
        full = torch.randn(shape, generator=torch.Generator().manual_seed(42)).flatten()
        n = full.numel()
        if n <= NOISE_FULL_LIMIT:
            index = torch.arange(n)
        else:
            index = torch.cat([torch.arange(0, n - 64, (n - 64) // 500 + 1), torch.arange(n - 64, n)])
        out[f"{prefix}{name}.shape"] = torch.tensor(shape, dtype=torch.int64)
        out[f"{prefix}{name}.index"] = index.to(torch.int64)
        out[f"{prefix}{name}.values"] = full[index].clone()
    return out


def scalar_kernel_noise_cases() -> dict:
    """noise_cases drawn by a child process whose torch dispatches to its DEFAULT (scalar) CPU kernels."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "noise.safetensors"
        env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
        subprocess.run([sys.executable, __file__, "--scalar-noise-to", str(path)], env=env, check=True)
        return load_file(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--scalar-noise-to", type=Path, help=argparse.SUPPRESS)  # the child of scalar_kernel_noise_cases
    args = ap.parse_args()
    if args.scalar_noise_to:
        assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
        save_file(noise_cases("noise_scalar."), args.scalar_noise_to)
        return
    if args.out is None:
        ap.error("--out is required")

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    print("torch CPU capability:", torch.backends.cpu.get_cpu_capability())

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if (out / "vae").exists():
        shutil.rmtree(out / "vae")

    vae = AutoencoderKLMiniMaxH3(**CONFIG).eval()
    randomize_(vae, torch.Generator().manual_seed(SEED))
    assert all(p.dtype == torch.float32 for p in vae.parameters())
    vae.save_pretrained(out / "vae", safe_serialization=True)
    weights_file = out / "vae" / "diffusion_pytorch_model.safetensors"
    canonicalize_header(weights_file)
    sd = {k: v.detach() for k, v in vae.state_dict().items()}
    reloaded = load_file(weights_file)
    assert set(reloaded) == set(sd) and all(torch.equal(reloaded[k], sd[k]) for k in sd)

    gen = torch.Generator().manual_seed(SEED + 1)
    golden = {}
    everything = lambda name: True  # noqa: E731
    no_full_res = lambda name: not (name == "conv_in" or name.startswith(("down.0.", "down.1.resnet")))  # noqa: E731

    img = torch.randint(0, 256, (1, 3, 1, 32, 24), generator=gen, dtype=torch.uint8)
    vae.enable_tiling(**DEFAULT_TILING)
    golden.update(capture_encode(vae, img, "img.", everything))
    golden["img.pixels"] = img
    golden["img.x"] = normalized(img)

    vid = torch.randint(0, 256, (1, 3, 22, 16, 24), generator=gen, dtype=torch.uint8)
    golden.update(capture_encode(vae, vid, "vid.", no_full_res))
    golden["vid.pixels"] = vid

    big = pattern_pixels(1, 288, 272)
    golden.update(capture_encode(vae, big, "big.", lambda name: name in ("tile_moments",)))

    vae.enable_tiling(**SMALL_TILING)
    tvid = pattern_pixels(22, 40, 32)
    golden.update(capture_encode(vae, tvid, "tvid.", lambda name: name in ("tile_moments", "conv_out")))

    # Shapes and the paths taken.
    assert golden["img.moments"].shape == (1, 8, 1, 4, 3)
    assert golden["vid.moments"].shape == (1, 8, 7, 2, 3) and "vid.clip.1" in golden and "vid.clip.2" not in golden
    assert golden["big.moments"].shape == (1, 8, 1, 36, 34) and golden["big.tile_moments"].shape == (1, 8, 1, 32, 32)
    assert golden["tvid.moments"].shape == (1, 8, 7, 5, 4) and golden["tvid.tile_moments"].shape == (1, 8, 5, 3, 3)
    assert golden["vid.noise"].numel() % 16 != 0, "one case must take the ragged-tail branch of the normal fill"
    # Tiling must matter: the untiled encode of the same frames gives other moments.
    vae.disable_tiling()
    with torch.no_grad():
        for name, px, tiling in (("big", big, DEFAULT_TILING), ("tvid", tvid, SMALL_TILING)):
            untiled = vae._encode(normalized(px))
            assert (untiled - golden[name + ".moments"]).abs().max() > 1e-3, name
    # The moments are not degenerate: logvar spans the clamp-free range, means vary.
    for p in ("img.", "vid.", "big.", "tvid."):
        m = golden[p + "moments"]
        print(f"{p} moments mean|x|={m.abs().mean():.3f} max={m.abs().max():.3f}")
        assert 0.05 < m.abs().mean() < 20

    # Kept small: a single frame's one clip is its moments, and big's noise is in noise.big (sampled).
    for p in ("img.", "big."):
        assert torch.equal(golden[p + "clip.0"], golden[p + "moments"])
        del golden[p + "clip.0"]
    del golden["big.noise"]
    golden.update(noise_cases())
    scalar = scalar_kernel_noise_cases()
    differing = sum(int((scalar[f"noise_scalar.{n}.values"] != golden[f"noise.{n}.values"]).sum()) for n in NOISE_SHAPES)
    assert differing > 0, "the scalar and AVX2 kernels should differ in some last bits"
    golden.update(scalar)
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "config": json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in dict(vae.config).items()
                              if not k.startswith("_")}, sort_keys=True),
        "tiling_default": json.dumps(DEFAULT_TILING, sort_keys=True),
        "tiling_small": json.dumps(SMALL_TILING, sort_keys=True),
        "torch_version": torch.__version__,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "diffusers_version": diffusers.__version__,
        "safetensors_version": safetensors.__version__,
        "numpy_version": np.__version__,
        "seed": str(SEED),
        "dtype": "float32, no autocast",
        "captures": "per-block tensors are those of the first encoder call (clip 0, tile (0,0)); <case>.clip.<i> is "
                    "clip i's stitched moments; <case>.moments the whole encode (after the token drop)",
    }
    save_golden(out / "golden.safetensors", golden, meta)
    print_sizes(out)


if __name__ == "__main__":
    main()
