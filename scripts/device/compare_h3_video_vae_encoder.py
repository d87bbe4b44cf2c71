#!/usr/bin/env python3
"""diffusers' video VAE encoder at full size on random weights, the reference side of
tests/cuda/test_h3_video_vae_encoder_full.cpp (run by compare_h3_video_vae_encoder.sh).

Builds AutoencoderKLMiniMaxH3 with the released encoder (a one-layer decoder: it is never run), fills the encoder
and quant_conv with seeded random weights (fan-in scaled, GroupNorm weights near 1), saves them as a vae/ folder
(config.json + the encoder keys), then runs the pipeline's encode_vae_condition on the GPU at torch's default
precision (fp32 weights, cudnn.allow_tf32 = True: TF32 convolutions) on two inputs whose uint8 pixels both sides
compute from the same formula: a 124-frame 1344x768 reference video and a 3648x2048 image. Also the image with
TF32 off (plain fp32). Writes <dir>/reference.safetensors (moments and latents of each) and
<dir>/reference.json (seconds and peak GPU memory of each encode, measured after a warm-up).
"""
import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn as nn
from diffusers import AutoencoderKLMiniMaxH3
from diffusers.modular_pipelines.minimax_h3.encoders import encode_vae_condition
from safetensors.torch import save_file

PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)
SEED = 20261201


def pattern_pixels(frames, height, width, device):
    """uint8 [1, 3, F, H, W] = (7x + 13y + 71c + 29f + (x*y mod 31)) mod 256 (the C++ test's pattern_pixels)."""
    c = torch.arange(3, device=device).view(3, 1, 1, 1)
    y = torch.arange(height, device=device).view(1, 1, height, 1)
    x = torch.arange(width, device=device).view(1, 1, 1, width)
    out = torch.empty((1, 3, frames, height, width), dtype=torch.uint8, device=device)
    for f in range(frames):
        out[0, :, f] = ((7 * x + 13 * y + 71 * c + 29 * f + (x * y) % 31) % 256).to(torch.uint8)[:, 0]
    return out


def randomize_encoder_(vae, gen):
    norm_weights = {f"{n}.weight" for n, m in vae.named_modules() if isinstance(m, nn.GroupNorm)}
    with torch.no_grad():
        for name, p in sorted(vae.named_parameters()):
            if not name.startswith(("encoder.", "quant_conv.")):
                continue
            if name in norm_weights:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * (1.0 / p[0].numel()) ** 0.5)


def build_encoder_vae(seed=SEED, **config):
    """AutoencoderKLMiniMaxH3 of the released encoder (keyword arguments override its config, e.g. a narrow one for a
    CPU check) with a one-layer decoder, which is never run; encoder and quant_conv filled by randomize_encoder_ from
    `seed`. fp32, CPU, eval. Also used by peer_ref2va_preprocess.py."""
    vae = AutoencoderKLMiniMaxH3(**{"decoder_num_layers": 1, **config}).eval()
    randomize_encoder_(vae, torch.Generator().manual_seed(seed))
    return vae


def timed_encode(vae, pixels, with_latents=True):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    t = time.perf_counter()
    with torch.no_grad():
        pixels_f = (pixels.to(torch.float32).div(255.0) - torch.tensor(PIXEL_MEAN, device=pixels.device).view(1, -1, 1, 1, 1)) \
            / torch.tensor(PIXEL_STD, device=pixels.device).view(1, -1, 1, 1, 1)
        moments = vae._encode(pixels_f)
        del pixels_f
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t
        # The recipe (re-encodes; untimed).
        latents = encode_vae_condition(vae, pixels, PIXEL_MEAN, PIXEL_STD, 42) if with_latents else None
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    return seconds, peak, moments.float().cpu()[0], (latents[0] if latents is not None else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--weights-only", action="store_true", help="write the vae/ folder and stop (a CPU check)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print("tf32 conv", torch.backends.cudnn.allow_tf32, flush=True)

    vae = build_encoder_vae()
    folder = args.dir / "vae"
    folder.mkdir(exist_ok=True)
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dict(vae.config).items() if not k.startswith("_")}
    config["_class_name"] = "AutoencoderKLMiniMaxH3"
    (folder / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True))
    sd = {k: v.detach().contiguous() for k, v in vae.state_dict().items() if k.startswith(("encoder.", "quant_conv."))}
    save_file(sd, folder / "diffusion_pytorch_model.safetensors")
    print("encoder params", sum(v.numel() for v in sd.values()), flush=True)
    if args.weights_only:
        return

    vae = vae.to("cuda")
    timed_encode(vae, pattern_pixels(22, 256, 256, "cuda"))  # warm-up (cuDNN algorithm choice, allocator)
    # Which CPU kernel draws the seed-42 posterior noise (AVX2 or scalar: core/torch_cpu_normal.h); ours uses AVX2.
    out, res = {}, {"peer": "diffusers", "precision": "fp32 weights, TF32 convolutions (torch default)",
                    "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()}
    for name, (frames, height, width) in (("image", (1, 2048, 3648)), ("video", (124, 768, 1344))):
        s, peak, moments, latents = timed_encode(vae, pattern_pixels(frames, height, width, "cuda"))
        out[f"{name}.moments"], out[f"{name}.latents"] = moments.contiguous(), latents.contiguous()
        res[f"{name}_s"], res[f"{name}_peak_gib"] = s, peak
        print(f"diffusers {name}: {s:.3f} s, peak {peak:.2f} GiB, moments {list(moments.shape)}", flush=True)
    torch.backends.cudnn.allow_tf32 = False
    timed_encode(vae, pattern_pixels(1, 256, 256, "cuda"))
    s, peak, moments, latents = timed_encode(vae, pattern_pixels(1, 2048, 3648, "cuda"))
    out["image_fp32.moments"], out["image_fp32.latents"] = moments.contiguous(), latents.contiguous()
    res["image_fp32_s"] = s
    print(f"diffusers image, TF32 off: {s:.3f} s", flush=True)
    # The video in plain fp32 too (moments only): the exact side both TF32 encoders are measured against,
    # and the reference for our fp32 video (the 1e-3 with the precision of each side stated).
    s, peak, moments, _ = timed_encode(vae, pattern_pixels(124, 768, 1344, "cuda"), with_latents=False)
    out["video_fp32.moments"] = moments.contiguous()
    res["video_fp32_s"] = s
    tf32 = out["video.moments"].double()
    res["video_tf32_vs_fp32_rel_l2"] = float((tf32 - moments.double()).norm() / moments.double().norm())
    print(f"diffusers video, TF32 off: {s:.3f} s; diffusers' TF32 moments vs its fp32: rel L2 "
          f"{res['video_tf32_vs_fp32_rel_l2']:.3e}", flush=True)
    save_file(out, args.dir / "reference.safetensors")
    (args.dir / "reference.json").write_text(json.dumps(res))
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
