#!/usr/bin/env python3
"""diffusers' audio VAE encoder at full size on random weights, the reference side of
tests/cuda/test_h3_audio_vae_encoder_full.cpp (run by compare_h3_audio_vae_encoder.sh).

Builds AutoencoderKLMiniMaxH3Audio with the released config (random latents_mean / latents_std), fills the encoder,
pre_block and mean_proj with seeded random weights (weight_g near 0.5, Snake alphas near 1, LayerNorms near identity,
linears fan-in scaled), saves them as an audio_vae/ folder (config.json + the encoder keys only), then runs the ref2va
pipeline's soundtrack encode on the GPU (`encode(waveform[:, None])`, the posterior mean, (mean - mu) / sigma as
channel-major rows) on a 5.167 s stereo clip (165334 samples at 32 kHz, the soundtrack of a 124-frame reference):
once in plain fp32 (cudnn.allow_tf32 = False, as sglang's reference encode) and once at torch's default (TF32
convolutions). Writes <dir>/reference.safetensors (the waveform, the normalized rows of both) and
<dir>/reference.json (seconds and peak GPU memory of each encode, after a warm-up).
"""
import argparse
import json
import time
from pathlib import Path

import torch
from diffusers import AutoencoderKLMiniMaxH3Audio
from safetensors.torch import save_file

SEED = 20261201
NUM_SAMPLES = 165334
ENCODER_PREFIXES = ("encoder.", "pre_block.", "mean_proj.")


def randomize_encoder_(vae, gen):
    with torch.no_grad():
        for name, p in sorted(vae.named_parameters()):
            if not name.startswith(ENCODER_PREFIXES):
                continue
            if name.endswith("weight_g"):
                p.copy_(0.5 + 0.05 * torch.randn(p.shape, generator=gen))
            elif name.endswith("weight_v"):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name.endswith(".alpha"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            elif p.ndim == 1:  # LayerNorm weights
                p.copy_(1.0 + 0.05 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * (1.0 / p[0].numel()) ** 0.5)


def build_encoder_vae(gen, **config):
    """AutoencoderKLMiniMaxH3Audio of the released config (keyword arguments override it, e.g. a narrow one for a CPU
    check) with random latents_mean / latents_std and the encoder, pre_block and mean_proj filled by randomize_encoder_,
    all drawn from `gen` in that order. fp32, CPU, eval. Also used by peer_ref2va_preprocess.py."""
    latents_mean = (0.5 * torch.randn(32, generator=gen)).tolist()
    latents_std = (0.5 + torch.rand(32, generator=gen)).tolist()
    vae = AutoencoderKLMiniMaxH3Audio(latents_mean=latents_mean, latents_std=latents_std, **config).eval()
    randomize_encoder_(vae, gen)
    return vae


def timed_encode(vae, waveform, mean, std):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    t = time.perf_counter()
    with torch.no_grad():
        posterior = vae.encode(waveform[:, None], return_dict=False)[0]
        latents = posterior.mode().float().cpu().transpose(1, 2)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated() - base
    return ((latents - mean) / std).contiguous(), seconds, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, required=True)
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    vae = build_encoder_vae(gen)
    latents_mean, latents_std = vae.config.latents_mean, vae.config.latents_std
    folder = args.dir / "audio_vae"
    folder.mkdir(exist_ok=True)
    vae.save_config(folder)
    state = {k: v.detach().contiguous() for k, v in vae.state_dict().items() if k.startswith(ENCODER_PREFIXES)}
    save_file(state, folder / "diffusion_pytorch_model.safetensors")
    print(f"saved {len(state)} encoder tensors, {sum(v.numel() for v in state.values()) / 1e6:.1f} M values")

    t = torch.arange(NUM_SAMPLES, dtype=torch.float64) / 32000
    tones = torch.stack([torch.sin(2 * torch.pi * 440 * t), torch.sin(2 * torch.pi * 1250 * t + 0.3)])
    waveform = (0.25 * tones + 0.05 * torch.randn((2, NUM_SAMPLES), generator=gen, dtype=torch.float64)).float()

    vae = vae.cuda()
    device_wave = waveform.cuda()
    mean = torch.tensor(latents_mean).view(1, 1, -1)
    std = torch.tensor(latents_std).view(1, 1, -1)
    out, timings = {"in.waveform": waveform}, {}
    for label, tf32 in (("fp32", False), ("tf32", True)):
        torch.backends.cudnn.allow_tf32 = tf32
        timed_encode(vae, device_wave, mean, std)  # warm-up (cuDNN algorithm choice)
        rows, seconds, peak = timed_encode(vae, device_wave, mean, std)
        out[f"normalized.{label}"] = rows
        timings[label] = {"seconds": seconds, "peak_bytes": peak}
        print(f"diffusers audio encode ({label}) [2, {NUM_SAMPLES}] -> {tuple(rows.shape)}: {seconds * 1e3:.1f} ms, "
              f"peak {peak / 2**20:.0f} MiB")
    a, b = out["normalized.fp32"].double(), out["normalized.tf32"].double()
    print(f"diffusers tf32 vs fp32: rel L2 {((a - b).norm() / b.norm()).item():.3e}")
    save_file(out, args.dir / "reference.safetensors")
    (args.dir / "reference.json").write_text(json.dumps(timings, indent=2))


if __name__ == "__main__":
    main()
