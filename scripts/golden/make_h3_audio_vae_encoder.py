#!/usr/bin/env python3
"""Golden generator for the MiniMax-H3 audio VAE *encoder* (diffusers `AutoencoderKLMiniMaxH3Audio.encode`, fp32, CPU),
on the path the ref2va pipeline takes for a reference soundtrack.

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_audio_vae_encoder.py --out tests/data/h3_audio_vae_encoder

The config keeps the released encoder rates (2, 4, 4, 5, 5), so the hop is the real 800 samples and the odd stride 5
(kernel 10, padding 3) is exercised, with tiny widths: encoder_dim 1 (blocks of 2, 4, 8, 16, 32 channels),
latent_dim 32, 2 heads of 16, latent_channels 8. The decoder, which the encode never runs, is as small as diffusers
allows at hop 800 (one upsampler of rate 800, decoder_dim 2).

Writes into --out:
  audio_vae/            diffusers `save_pretrained` output (config.json with latents_mean / latents_std, one
                        safetensors file).
  golden.safetensors    in.waveform [2, N]: a stereo clip at 32 kHz, N = 5 * 800 + 317 (not a multiple of 800), put
                        through the pipeline's `_normalize_audio_condition` (stereo, already at the VAE's rate: kept as
                        is); then `audio_vae.encode(waveform[:, None])`, captured with hooks, in diffusers' layouts:
                          encoder.conv_in [2, 1, 4800]          the first WN conv (after the zero right-pad to 4800)
                          encoder.block.<i>.unit.<u>            a DAC residual unit's output (a few of them)
                          encoder.block.<i>                     an encoder block's output (strided conv), i < 5
                          encoder [2, 32, 6]                    the trunk's last conv
                          pre_block.attn / .proj / .mlp         the attention branch (after its 8 -> 8 projection),
                                                                the norm3 branch, the GeGLU MLP, each [2, 6, 8]
                          pre_block [2, 6, 8]                   pre_block's output
                          mean [2, 8, 6]                        mean_proj's output = posterior.mode()
                          normalized [2, 6, 8]                  (mean^T - latents_mean) / latents_std, as the pipeline
                          rows [12, 8]                          the channel-major audio rows the packed sequence takes
                        folded.<module>.weight: torch's weight-norm result for two encoder convs.

Weights are random with non-trivial scales: weight_g in [0.3, 0.7] (not 1; small enough that the signal stays O(1)), Snake alphas in [0.5, 1.5], LayerNorm affine not identity,
and a non-zero `zero_k_bias` buffer (zeros in the release; non-zero here so a C++ encoder that ignored the stored key
bias would fail). Nothing here copies diffusers' code.
"""

import argparse
import json
import shutil
from pathlib import Path

import diffusers
import torch
from diffusers import AutoencoderKLMiniMaxH3Audio
from diffusers.modular_pipelines.minimax_h3.before_encoder import MiniMaxH3Ref2VASetupStep
from safetensors.torch import load_file

from golden_io import canonicalize_header, print_sizes, save_golden


SEED = 20261201
SAMPLE_RATE = 32000
HOP = 800
NUM_SAMPLES = 5 * HOP + 317  # 6 latents per channel after the right-pad
CONFIG = dict(
    encoder_dim=1,
    encoder_rates=(2, 4, 4, 5, 5),
    latent_dim=32,
    latent_channels=8,
    num_attention_heads=2,
    decoder_dim=2,
    decoder_rates=(800,),
    decoder_kernel_sizes=(800,),
    resblock_kernel_sizes=(3,),
    resblock_dilation_sizes=((1,),),
    sampling_rate=SAMPLE_RATE,
)
# Residual-unit outputs kept (the others are checked through their block's output).
KEPT_UNITS = [(0, 0), (2, 1), (4, 2)]


def randomize_(model: torch.nn.Module, gen: torch.Generator) -> None:
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("weight_g"):  # rows of norm 0.3-0.7: the residual sums stay O(1) through the trunk
                p.copy_(0.3 + 0.4 * torch.rand(p.shape, generator=gen))
            elif name.endswith("weight_v"):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif name.startswith("encoder.") and name.endswith(".alpha"):  # DAC Snake: plain alpha, kept positive
                p.copy_(0.5 + torch.rand(p.shape, generator=gen))
            elif name.endswith(".alpha") or name.endswith(".beta"):  # decoder SnakeBeta (log scale)
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif p.ndim == 1:  # LayerNorm weights
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:  # plain Linear / Conv1d weights
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
        model.pre_block.attn.zero_k_bias.copy_(0.1 * torch.randn(model.pre_block.attn.zero_k_bias.shape, generator=gen))


def capture(model: AutoencoderKLMiniMaxH3Audio, waveform: torch.Tensor) -> dict:
    cfg = model.config
    cap, handles = {}, []
    enc = model.encoder.block
    n = len(cfg.encoder_rates)

    def keep(name):
        def hook(_m, _a, out):
            cap[name] = out.detach().clone()
        return hook

    handles.append(enc[0].register_forward_hook(keep("encoder.conv_in")))
    for i in range(n):
        handles.append(enc[i + 1].register_forward_hook(keep(f"encoder.block.{i}")))
    for i, u in KEPT_UNITS:
        handles.append(enc[i + 1].block[u].register_forward_hook(keep(f"encoder.block.{i}.unit.{u}")))
    handles.append(model.encoder.register_forward_hook(keep("encoder")))
    handles.append(model.pre_block.attn.register_forward_hook(keep("pre_block.attn")))
    handles.append(model.pre_block.proj.register_forward_hook(keep("pre_block.proj")))
    handles.append(model.pre_block.mlp.register_forward_hook(keep("pre_block.mlp")))
    handles.append(model.pre_block.register_forward_hook(keep("pre_block")))

    # The pipeline's path (modular_pipelines/minimax_h3/encoders.py, Ref2VAReferenceEncoderStep): the stereo
    # channels are two batch items, the posterior mean is taken, transposed to rows and normalized per channel.
    with torch.no_grad():
        posterior = model.encode(waveform[:, None], return_dict=False)[0]
    for h in handles:
        h.remove()
    mean = torch.tensor(cfg.latents_mean).view(1, 1, -1)
    std = torch.tensor(cfg.latents_std).view(1, 1, -1)
    cap["mean"] = posterior.mode().detach().clone()
    latents = posterior.mode().float().cpu().transpose(1, 2)
    cap["normalized"] = ((latents - mean) / std).contiguous()
    cap["rows"] = cap["normalized"].reshape(-1, cfg.latent_channels).clone()
    cap["folded.encoder.block.0.weight"] = enc[0].weight.detach().clone()
    cap["folded.encoder.block.2.block.4.weight"] = enc[2].block[4].weight.detach().clone()
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
    assert model.hop_length == HOP
    randomize_(model, gen)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert all(v.dtype == torch.float32 for v in sd.values())
    assert "pre_block.attn.zero_k_bias" in sd and sd["pre_block.attn.zero_k_bias"].abs().max() > 0

    model.save_pretrained(vae_dir, safe_serialization=True)
    files = sorted(vae_dir.glob("*.safetensors"))
    assert len(files) == 1, files
    canonicalize_header(files[0])
    reloaded = load_file(files[0])
    assert set(reloaded) == set(sd) and all(torch.equal(reloaded[k], sd[k]) for k in sd)

    # A stereo clip: two different tones with noise, about -10 dBFS, so the channels encode differently.
    t = torch.arange(NUM_SAMPLES, dtype=torch.float64) / SAMPLE_RATE
    tones = torch.stack([torch.sin(2 * torch.pi * 440 * t), torch.sin(2 * torch.pi * 1250 * t + 0.3)])
    waveform = (0.25 * tones + 0.05 * torch.randn((2, NUM_SAMPLES), generator=gen, dtype=torch.float64)).float()
    # The setup step's soundtrack normalization (stereo at the VAE rate: truncation only, far beyond the clip).
    normalized_in = MiniMaxH3Ref2VASetupStep._normalize_audio_condition(waveform, SAMPLE_RATE, SAMPLE_RATE, 15.0)
    assert torch.equal(normalized_in, waveform)

    cap = capture(model, normalized_in)

    # A fresh model loaded from the saved file reproduces the run bit for bit.
    m2 = AutoencoderKLMiniMaxH3Audio(**CONFIG, latents_mean=latents_mean, latents_std=latents_std).eval()
    m2.load_state_dict(reloaded, strict=True)
    assert torch.equal(capture(m2, normalized_in)["rows"], cap["rows"])

    num_latents = -(-NUM_SAMPLES // HOP)
    assert cap["mean"].shape == (2, c, num_latents), cap["mean"].shape
    assert cap["encoder.conv_in"].shape[-1] == num_latents * HOP
    for k, v in cap.items():
        assert torch.isfinite(v).all(), k
        print(f"{k:40s} {tuple(v.shape)}  mean|x| {v.abs().mean():.4f}  max|x| {v.abs().max():.4f}")
    # The channels differ, and causal attention makes each step depend on the steps before it.
    assert (cap["mean"][0] - cap["mean"][1]).abs().max() > 1e-2

    golden = {"in.waveform": normalized_in, **cap}
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "config": json.dumps({k: v for k, v in model.config.items() if not k.startswith("_")}, sort_keys=True),
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "seed": str(SEED),
        "layout": "in.waveform [2, N] stereo at 32 kHz; trunk [B, C, L]; pre_block [B, A, C]; mean [B, C, A]; "
                  "normalized [B, A, C]; rows [2 * A, C] channel-major",
    }
    path = out / "golden.safetensors"
    save_golden(path, golden, meta)
    print_sizes(out)


if __name__ == "__main__":
    main()
