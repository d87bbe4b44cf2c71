#!/usr/bin/env python3
"""Golden generator for the MiniMax-H3 denoising loop (diffusers 0.42.1, CPU, fp32, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_denoise_loop.py --out tests/data/h3_denoise_loop

Runs the loop of diffusers' modular MiniMax-H3 pipeline over the tiny transformer of tests/data/h3_tiny
(its own `from_pretrained`): the layout from `MiniMaxH3PrepareLayoutStep.build_packed_sequence`, video noise
drawn as latents and packed with `patchify_video_latents`, audio noise drawn as rows, the two schedules
(`MiniMaxH3Scheduler`, shifts 12 and 3) and the per-step row plan from
`MiniMaxH3SetTimestepsStep.build_row_timesteps`, then per step one transformer forward and one `step()` per
schedule on the generated rows only, as `MiniMaxH3LoopSchedulerStep` does. Two cases: t2va, and fl2va with one
"first" keyframe (its conditioning rows are never stepped).

Writes --out/golden.safetensors, per case c in {t2va, fl2va}:
  <c>.text            f32 [L, text_dim]           the conditioning features
  <c>.video_noise     f32 [C, T, H, W]            target video noise as latents (before patchify)
  <c>.condition_rows  f32 [n_cond, 96-ish]         fl2va only: the anchor rows that lead the video rows
  <c>.audio_noise     f32 [2A, C_audio]           audio noise rows (channel-major)
  <c>.video_rows.<k>  f32 [Nv, patch_dim]         all video rows after step k (k = 1..steps)
  <c>.audio_rows.<k>  f32 [Na, C_audio]
  <c>.video_latents   f32 [C, T, H, W]            the final target rows unpacked (checked to re-patchify exactly)
Metadata: steps (model evaluations), the layout sizes, versions. Nothing here copies diffusers' code; it calls it.
"""

import argparse
import json
from pathlib import Path

import diffusers
import torch
from diffusers import MiniMaxH3Scheduler, MiniMaxH3Transformer3DModel
from diffusers.modular_pipelines.minimax_h3.before_denoise import (
    MiniMaxH3PrepareLayoutStep,
    MiniMaxH3SetTimestepsStep,
    patchify_video_latents,
)
from safetensors.torch import load_file

from golden_io import save_golden


SEED = 20261130
NUM_TEXT, LATENT_T, LATENT_H, LATENT_W, NUM_AUDIO = 5, 3, 4, 6, 4
AUDIO_CHANNELS = 2
TAG_VIDEO, TAG_TEXT, TAG_AUDIO = 0, 1, 2
NUM_INFERENCE_STEPS = 4  # grid points: 3 model evaluations
KEYFRAME_NOISE_AUG = 0.999


def unpack_video(rows: torch.Tensor, channels: int, patch) -> torch.Tensor:
    """Target rows -> latents [C, T, H, W]: the inverse of patchify_video_latents, verified below."""
    pt, ph, pw = patch
    x = rows.reshape(LATENT_T // pt, LATENT_H // ph, LATENT_W // pw, channels, pt, ph, pw)
    x = x.permute(3, 0, 4, 1, 5, 2, 6).reshape(channels, LATENT_T, LATENT_H, LATENT_W)
    assert torch.equal(patchify_video_latents(x[None], patch), rows), "unpack is not patchify's inverse"
    return x.contiguous()


def run_case(model, name: str, keyframes: tuple, gen: torch.Generator, num_inference_steps=NUM_INFERENCE_STEPS,
             shifts=(12.0, 3.0), video_sigmas=None, audio_sigmas=None) -> dict:
    """One loop. A given sigma list replaces its stream's shifted grid (set_timesteps(sigmas=...)):
    make_h3_custom_sigmas.py runs this loop with lists."""
    cfg = model.config
    patch = tuple(cfg.patch_size)
    (position_ids, token_tags, video_indices, audio_indices, text_indices, n_cond_v, n_cond_a) = (
        MiniMaxH3PrepareLayoutStep.build_packed_sequence(
            text_token_tags=torch.full((NUM_TEXT,), TAG_TEXT, dtype=torch.long),
            num_latent_frames=LATENT_T,
            latent_height=LATENT_H,
            latent_width=LATENT_W,
            num_audio_latents=NUM_AUDIO,
            patch_size=patch,
            audio_channels=AUDIO_CHANNELS,
            audio_tag=TAG_AUDIO,
            video_tag=TAG_VIDEO,
            keyframe_anchors=keyframes,
        )
    )
    patch_dim = cfg.in_channels * patch[0] * patch[1] * patch[2]
    out = {}
    text = torch.randn((NUM_TEXT, cfg.text_dim), generator=gen, dtype=torch.float32)
    condition = torch.randn((n_cond_v, patch_dim), generator=gen, dtype=torch.float32)
    video_noise = torch.randn((1, cfg.in_channels, LATENT_T, LATENT_H, LATENT_W), generator=gen, dtype=torch.float32)
    audio_noise = torch.randn((NUM_AUDIO * AUDIO_CHANNELS, cfg.audio_in_channels), generator=gen, dtype=torch.float32)
    out[f"{name}.text"], out[f"{name}.video_noise"], out[f"{name}.audio_noise"] = text, video_noise[0], audio_noise
    if n_cond_v:
        out[f"{name}.condition_rows"] = condition

    latents = torch.cat([condition, patchify_video_latents(video_noise, patch)])  # conditioning rows first
    audio_latents = audio_noise.clone()
    video_sched, audio_sched = MiniMaxH3Scheduler(shift=shifts[0]), MiniMaxH3Scheduler(shift=shifts[1])
    video_sched.set_timesteps(num_inference_steps, sigmas=video_sigmas)
    audio_sched.set_timesteps(num_inference_steps, sigmas=audio_sigmas)
    steps = 0
    for i, (t, t_audio) in enumerate(zip(video_sched.timesteps, audio_sched.timesteps)):
        timestep, timestep_indices = MiniMaxH3SetTimestepsStep.build_row_timesteps(
            video_indices, audio_indices, n_cond_v, n_cond_a, text_indices.numel(), float(t), float(t_audio),
            max(float(t), KEYFRAME_NOISE_AUG), 1.0)
        with torch.no_grad():
            v, a = model(hidden_states=latents[None], audio_hidden_states=audio_latents[None],
                         encoder_hidden_states=text[None], timestep=timestep, timestep_indices=timestep_indices,
                         token_tags=token_tags, position_ids=position_ids, video_indices=video_indices,
                         audio_indices=audio_indices, text_indices=text_indices, return_dict=False)
        latents[n_cond_v:] = video_sched.step(v[0, n_cond_v:].float(), t, latents[n_cond_v:], return_dict=False)[0]
        audio_latents[n_cond_a:] = audio_sched.step(a[0, n_cond_a:].float(), audio_sched.timesteps[i],
                                                    audio_latents[n_cond_a:], return_dict=False)[0]
        steps += 1
        out[f"{name}.video_rows.{steps}"] = latents.clone()
        out[f"{name}.audio_rows.{steps}"] = audio_latents.clone()
    assert torch.equal(latents[:n_cond_v], condition), "conditioning rows must never be stepped"
    out[f"{name}.video_latents"] = unpack_video(latents[n_cond_v:], cfg.in_channels, patch)
    print(f"{name}: {position_ids.shape[0]} rows, {n_cond_v} conditioning rows, {steps} steps")
    return out, steps


def load_tiny_transformer(folder: Path):
    """Built from config.json and loaded strictly (from_pretrained wants accelerate for fp32 islands)."""
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k[0] != "_"}
    model = MiniMaxH3Transformer3DModel(**config).float().eval()
    state = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(shard))
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--transformer", type=Path, default=Path("tests/data/h3_tiny/transformer"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = load_tiny_transformer(args.transformer)

    golden = {}
    steps = {}
    for name, keyframes in (("t2va", ()), ("fl2va", ("first",))):
        tensors, steps[name] = run_case(model, name, keyframes, gen)
        golden.update(tensors)
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "seed": str(SEED),
        "steps": json.dumps(steps),
        "layout": json.dumps(dict(text=NUM_TEXT, latent_frames=LATENT_T, latent_height=LATENT_H,
                                  latent_width=LATENT_W, audio_latents=NUM_AUDIO, audio_channels=AUDIO_CHANNELS,
                                  num_inference_steps=NUM_INFERENCE_STEPS)),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "golden.safetensors"
    save_golden(path, golden, meta)
    print(f"{path}: {path.stat().st_size} bytes, {len(golden)} tensors")


if __name__ == "__main__":
    main()
