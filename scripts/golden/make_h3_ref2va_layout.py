#!/usr/bin/env python3
"""Golden generator for the ref2va packed layout of diffusers' modular MiniMax-H3 pipeline (0.42.1, CPU).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_ref2va_layout.py --out tests/data/h3_ref2va_layout

Drives two blocks of the pipeline as they run in `MiniMaxH3Ref2VABlocks`, on a bare `MiniMaxH3ModularPipeline`
(no model loaded: its config properties fall back to the released values, patch (1, 2, 2), 2 audio channels,
tags text 1 / video 0 / audio 2, keyframe_noise_aug 0.999):
- `MiniMaxH3Ref2VAPrepareLayoutStep.__call__` on real `MiniMaxH3{Image,Video,Audio}Reference` objects in request
  order (their media are placeholders: the step reads only `kind` and `has_audio`) with zero condition latents of
  the shapes the reference encoder would make ([1, C, T_r, h, w] per image/video, [2a, 32] per audio-bearing
  reference). The step derives the target's latent geometry from height / width / num_frames itself.
- `MiniMaxH3SetTimestepsStep.__call__` with the released schedulers (`MiniMaxH3Scheduler`, shifts 12 and 3) for
  STEPS steps: the per-step (timestep, timestep_indices) plan.

Three reference mixes (each case's geometry is stored beside it as `<case>.geometry`, one row per reference:
kind (0 image, 1 video, 2 audio), latent frames, latent h, latent w, audio latents per channel):
- `a`: 64x96 target, 124 frames; two images of different aspect (4x8, 6x4), a video with a soundtrack (37 x 6x10,
  207 audio latents), an audio clip (150 latents); 7 text rows with vision-tagged (0) rows among them.
- `b`: 96x64 target, 141 frames; a video without sound (12 x 4x4), an audio clip (60), an image (2x2), a video with
  a soundtrack longer than its frames' span (7 x 4x6, 207 audio latents: the clock advances by the audio).
- `c`: 32x32 target, 124 frames; an audio clip first (33), a 4:1 image (8x2), a 2-latent silent video (2 x 2x4).

Writes --out/golden.safetensors: per case `<case>.position_ids` (f64, the step's own grid), `.token_tags`,
`.video_indices`, `.audio_indices`, `.text_indices`, `.text_token_tags`, `.counts` ([ncv, nca, T, h, w, A]),
`.timestep.<k>` (f32) and `.timestep_indices.<k>` for every step k.
"""

import argparse
import sys
from pathlib import Path

import diffusers
import numpy as np
import torch
from diffusers import MiniMaxH3Scheduler
from diffusers.modular_pipelines.minimax_h3.before_denoise import (
    MiniMaxH3Ref2VAPrepareLayoutStep,
    MiniMaxH3SetTimestepsStep,
)
from diffusers.modular_pipelines.minimax_h3.references import (
    MiniMaxH3AudioReference,
    MiniMaxH3ImageReference,
    MiniMaxH3VideoReference,
)
from diffusers.modular_pipelines.modular_pipeline import PipelineState

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import print_sizes, save_golden  # noqa: E402

STEPS = 4
LATENT_CHANNELS = 4  # any: only the condition latents' spatial-temporal shape is read
AUDIO_LATENT_CHANNELS = 32

# (kind, latent frames, latent h, latent w, audio latents per channel); kind 0 image, 1 video, 2 audio.
CASES = {
    "a": dict(height=64, width=96, num_frames=124, text_tags=[1, 1, 0, 0, 0, 1, 1],
              refs=[(0, 1, 4, 8, 0), (0, 1, 6, 4, 0), (1, 37, 6, 10, 207), (2, 0, 0, 0, 150)]),
    "b": dict(height=96, width=64, num_frames=141, text_tags=[1, 0, 0, 1, 1],
              refs=[(1, 12, 4, 4, 0), (2, 0, 0, 0, 60), (0, 1, 2, 2, 0), (1, 7, 4, 6, 207)]),
    "c": dict(height=32, width=32, num_frames=124, text_tags=[1, 1, 1],
              refs=[(2, 0, 0, 0, 33), (0, 1, 8, 2, 0), (1, 2, 2, 4, 0)]),
}


def make_references(refs):
    references, condition_latents, audio_condition_latents = [], [], []
    placeholder_audio = torch.zeros(1, 8)
    for kind, frames, h, w, a in refs:
        if kind == 0:
            references.append(MiniMaxH3ImageReference(image=np.zeros((h * 16, w * 16, 3), dtype=np.uint8)))
            condition_latents.append(torch.zeros(1, LATENT_CHANNELS, 1, h, w))
        elif kind == 1:
            references.append(MiniMaxH3VideoReference(frames=np.zeros((1, 16, 16, 3), dtype=np.uint8), fps=24.0,
                                                      audio=placeholder_audio if a else None,
                                                      sample_rate=32000 if a else None))
            condition_latents.append(torch.zeros(1, LATENT_CHANNELS, frames, h, w))
            if a:
                audio_condition_latents.append(torch.zeros(2 * a, AUDIO_LATENT_CHANNELS))
        else:
            references.append(MiniMaxH3AudioReference(audio=placeholder_audio, sample_rate=32000))
            audio_condition_latents.append(torch.zeros(2 * a, AUDIO_LATENT_CHANNELS))
    return references, condition_latents, audio_condition_latents


def run_case(name, case, out):
    layout_step, timesteps_step = MiniMaxH3Ref2VAPrepareLayoutStep(), MiniMaxH3SetTimestepsStep()
    # The timesteps step declares the schedulers; the layout step reads only config properties with defaults.
    pipe = timesteps_step.init_pipeline()
    pipe.update_components(scheduler=MiniMaxH3Scheduler(shift=12.0), audio_scheduler=MiniMaxH3Scheduler(shift=3.0))
    references, condition_latents, audio_condition_latents = make_references(case["refs"])
    text_tags = torch.tensor(case["text_tags"], dtype=torch.long)
    state = PipelineState()
    for key, value in dict(text_token_tags=text_tags, normalized_references=references,
                           condition_latents=condition_latents, audio_condition_latents=audio_condition_latents,
                           height=case["height"], width=case["width"], num_frames=case["num_frames"],
                           num_inference_steps=STEPS).items():
        state.set(key, value)
    _, state = layout_step(pipe, state)
    _, state = timesteps_step(pipe, state)
    g = state.get
    assert g("position_ids").dtype == torch.float64
    out[f"{name}.position_ids"] = g("position_ids").contiguous()
    for key in ("token_tags", "video_indices", "audio_indices", "text_indices"):
        out[f"{name}.{key}"] = g(key).to(torch.int64).contiguous()
    out[f"{name}.text_token_tags"] = text_tags
    out[f"{name}.geometry"] = torch.tensor(case["refs"], dtype=torch.int64)
    out[f"{name}.counts"] = torch.tensor([g("num_condition_video_rows"), g("num_condition_audio_rows"),
                                         g("num_latent_frames"), g("latent_height"), g("latent_width"),
                                         g("num_audio_latents")], dtype=torch.int64)
    out[f"{name}.video_timesteps"] = g("timesteps").to(torch.float32).contiguous()
    out[f"{name}.audio_timesteps"] = g("audio_timesteps").to(torch.float32).contiguous()
    for k, (timestep, indices) in enumerate(g("row_timestep_plan")):
        assert timestep.dtype == torch.float32
        out[f"{name}.timestep.{k}"] = timestep.contiguous()
        out[f"{name}.timestep_indices.{k}"] = indices.to(torch.int64).contiguous()
    print(f"case {name}: S = {g('position_ids').shape[0]}, ncv = {g('num_condition_video_rows')}, "
          f"nca = {g('num_condition_audio_rows')}, step timesteps {[t.tolist() for t, _ in g('row_timestep_plan')]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, case in CASES.items():
        run_case(name, case, tensors)
    save_golden(args.out / "golden.safetensors", tensors,
                {"diffusers": diffusers.__version__, "torch": torch.__version__, "steps": str(STEPS)})
    print_sizes(args.out)


if __name__ == "__main__":
    main()
