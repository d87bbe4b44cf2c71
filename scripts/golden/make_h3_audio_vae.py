#!/usr/bin/env python3
"""Golden generator for the tiny MiniMax-H3 audio VAE decoder (diffusers `AutoencoderKLMiniMaxH3Audio`, fp32, CPU).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_audio_vae.py --out tests/data/h3_audio_vae

Writes into --out:
  audio_vae/            diffusers `save_pretrained` output (config.json with latents_mean / latents_std, one
                        safetensors file). The config is the tiny one of MODELS_H3.md section 9 (decoder_dim 16,
                        rates (2, 2), kernels (4, 4), AMP kernels (3, 7) with dilations ((1, 3), (1, 3)), latent_dim 32,
                        latent_channels 8); names are the original release's (weight_g / weight_v pairs, Kaiser
                        `filter` buffers), encoder included although only the decoder is tested.
  golden.safetensors    in.rows: the audio rows of a packed sequence, channel-major [2 * A, 8] with A = 8 latents
                        per stereo channel; then the pipeline's decode path, captured with hooks:
                          denormalized [2, 8, A]    rows -> (2, A, 8) -> (2, 8, A), then z * std + mean
                          dec_in_proj [2, 32, A], conv_pre [2, 16, A]
                          stage.<i>.up        the transposed-conv upsampler's output
                          stage.<i>.amp.<j>   AMP block j of the stage
                          stage.<i>           the mean of the stage's AMP blocks
                          stage.0.amp.0.act.0 the first alias-free SnakeBeta (up 2x, snake, down 2x)
                          act_post, conv_post (before the clamp), out [2, 1, 4 * A] (clamped)
                        folded.<module>.weight: torch's weight-norm result for a Conv1d and a ConvTranspose1d.

Weights are random with non-trivial scales (weight_g not 1, SnakeBeta log-alpha/beta not 0); the Kaiser filters keep
the values the model computes, as a released checkpoint stores them. Nothing here copies diffusers' code.
"""

import argparse
import json
import shutil
from pathlib import Path

import diffusers
import numpy as np
import torch
from diffusers import AutoencoderKLMiniMaxH3Audio
from safetensors.torch import load_file

from golden_io import canonicalize_header, print_sizes, save_golden


SEED = 20260825
NUM_LATENTS = 8  # per stereo channel
STEREO = 2
CONFIG = dict(
    encoder_dim=4,
    encoder_rates=(2, 2),
    latent_dim=32,
    latent_channels=8,
    num_attention_heads=2,
    decoder_dim=16,
    decoder_rates=(2, 2),
    decoder_kernel_sizes=(4, 4),
    resblock_kernel_sizes=(3, 7),
    resblock_dilation_sizes=((1, 3), (1, 3)),
    sampling_rate=32000,
)


def randomize_(model: torch.nn.Module, gen: torch.Generator) -> None:
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("weight_g"):
                p.copy_(0.6 + 0.8 * torch.rand(p.shape, generator=gen))
            elif name.endswith("weight_v"):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name.endswith(".alpha") or name.endswith(".beta"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:  # plain weights (dec_in_proj, encoder attention / LayerNorm, ...)
                fan_in = p[0].numel() if p.ndim > 1 else 1
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5 if p.ndim > 1 else
                        1.0 + 0.1 * torch.randn(p.shape, generator=gen))
        # The AMP stack grows the signal; a smaller final gain leaves some samples inside [-1, 1] and clamps others.
        model.decoder.conv_post.weight_g.mul_(0.3)


def capture(model: AutoencoderKLMiniMaxH3Audio, rows: torch.Tensor) -> dict:
    cfg = model.config
    cap, handles = {}, []
    dec = model.decoder

    def keep(name):
        def hook(_m, _a, out):
            cap[name] = out.detach().clone()
        return hook

    def keep_input(name):
        def hook(_m, args):
            cap[name] = args[0].detach().clone()
        return hook

    handles.append(model.dec_in_proj.register_forward_hook(keep("dec_in_proj")))
    handles.append(dec.conv_pre.register_forward_hook(keep("conv_pre")))
    num_kernels = len(cfg.resblock_kernel_sizes)
    for i in range(len(cfg.decoder_rates)):
        handles.append(dec.ups[i][0].register_forward_hook(keep(f"stage.{i}.up")))
        for j in range(num_kernels):
            handles.append(dec.resblocks[i * num_kernels + j].register_forward_hook(keep(f"stage.{i}.amp.{j}")))
        # A stage's output (mean of its AMP blocks) is the next module's input.
        nxt = dec.ups[i + 1][0] if i + 1 < len(cfg.decoder_rates) else dec.activation_post
        handles.append(nxt.register_forward_pre_hook(keep_input(f"stage.{i}")))
    handles.append(dec.resblocks[0].activations[0].register_forward_hook(keep("stage.0.amp.0.act.0")))
    handles.append(dec.activation_post.register_forward_hook(keep("act_post")))
    handles.append(dec.conv_post.register_forward_hook(keep("conv_post")))

    # The pipeline's path (modular_pipelines/minimax_h3/decoders.py): channel-major rows -> one batch item per
    # stereo channel, denormalize with the config's per-channel statistics, decode.
    latents = rows.reshape(STEREO, NUM_LATENTS, rows.shape[-1]).permute(0, 2, 1).contiguous()
    mean = torch.tensor(cfg.latents_mean).view(1, -1, 1)
    std = torch.tensor(cfg.latents_std).view(1, -1, 1)
    latents = latents * std + mean
    cap["denormalized"] = latents.clone()
    with torch.no_grad():
        out = model.decode(latents, return_dict=False)[0]
    for h in handles:
        h.remove()
    cap["out"] = out.detach().clone()
    cap["folded.decoder.conv_pre.weight"] = dec.conv_pre.weight.detach().clone()
    cap["folded.decoder.ups.0.0.weight"] = dec.ups[0][0].weight.detach().clone()
    return cap


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    vae_dir = out / "audio_vae"
    if vae_dir.exists():
        shutil.rmtree(vae_dir)

    gen = torch.Generator().manual_seed(SEED)
    c = CONFIG["latent_channels"]
    latents_mean = (0.5 * torch.randn(c, generator=gen)).tolist()
    latents_std = (0.5 + torch.rand(c, generator=gen)).tolist()
    model = AutoencoderKLMiniMaxH3Audio(**CONFIG, latents_mean=latents_mean, latents_std=latents_std).eval()
    randomize_(model, gen)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert all(v.dtype == torch.float32 for v in sd.values())

    model.save_pretrained(vae_dir, safe_serialization=True)
    files = sorted(vae_dir.glob("*.safetensors"))
    assert len(files) == 1, files
    canonicalize_header(files[0])
    reloaded = load_file(files[0])
    assert set(reloaded) == set(sd) and all(torch.equal(reloaded[k], sd[k]) for k in sd)

    rows = torch.randn((STEREO * NUM_LATENTS, c), generator=gen, dtype=torch.float32)
    cap = capture(model, rows)

    # A fresh model loaded from the saved file reproduces the run bit for bit.
    m2 = AutoencoderKLMiniMaxH3Audio(**CONFIG, latents_mean=latents_mean, latents_std=latents_std).eval()
    m2.load_state_dict(reloaded, strict=True)
    assert torch.equal(capture(m2, rows)["out"], cap["out"])

    hop = int(np.prod(CONFIG["decoder_rates"]))
    assert cap["out"].shape == (STEREO, 1, hop * NUM_LATENTS), cap["out"].shape
    pre = cap["conv_post"]
    clamped = (pre.abs() > 1).float().mean().item()
    print(f"conv_post: max|x| {pre.abs().max():.3f}, {100 * clamped:.0f}% clamped")
    assert 0.05 < clamped < 0.6, "the clamp should cut some samples, not all"
    for k, v in cap.items():
        assert torch.isfinite(v).all(), k
        print(f"{k:34s} {tuple(v.shape)}  mean|x| {v.abs().mean():.4f}")
    for i in range(len(CONFIG["decoder_rates"])):
        a, b = cap[f"stage.{i}.amp.0"], cap[f"stage.{i}.amp.1"]
        assert (a - b).abs().max() > 1e-2 and torch.equal(cap[f"stage.{i}"], (a + b) / 2)

    golden = {"in.rows": rows, **cap}
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "config": json.dumps({k: v for k, v in model.config.items() if not k.startswith("_")}, sort_keys=True),
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "seed": str(SEED),
        "layout": "in.rows: channel-major audio rows [stereo * A, latent_channels]; activations [stereo, C, L]",
    }
    path = out / "golden.safetensors"
    save_golden(path, golden, meta)
    print_sizes(out)


if __name__ == "__main__":
    main()
