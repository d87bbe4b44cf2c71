#!/usr/bin/env python3
"""Golden generator for few-step sampling: given sigma lists and the turbo presets through the denoising loop
(diffusers 0.42.1, CPU, fp32, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_custom_sigmas.py --out tests/data/h3_custom_sigmas

The loop is make_h3_denoise_loop.py's (the modular pipeline's layout, packed noise, row timestep plans and one
transformer forward plus one `MiniMaxH3Scheduler.step()` per schedule per step, over tests/data/h3_tiny), with the
schedules set as Orochi's options mean them:
  hyperflow  t2va, --sigmas with HyperFlow's fixed 8-step video grid (MODELS_H3.md section 6): the video scheduler
             fed that list (`set_timesteps(sigmas=...)`), the audio one the shifted grid of as many points
             (num_inference_steps 9, shift 3)
  lists      fl2va (one "first" keyframe), --sigmas and --audio-sigmas both given (4 evaluations each)
  turbo4     t2va, --preset turbo4: num_inference_steps 5 (the q_i = (4 - i)/4 grid), shifts 6 and 3

Writes --out/golden.safetensors, per case c, besides make_h3_denoise_loop.py's tensors (<c>.text, <c>.video_noise,
<c>.condition_rows, <c>.audio_noise, <c>.video_rows.<k>, <c>.audio_rows.<k>, <c>.video_latents):
  <c>.given_video_sigmas / <c>.given_audio_sigmas   f64 [N + 1]   the lists as given (absent: the shifted grid)
  <c>.video_sigmas / <c>.audio_sigmas                f32 [N + 1]   the schedulers' sigmas
  <c>.video_timesteps / <c>.audio_timesteps          f32 [N]       the schedulers' timesteps
Metadata: each case's steps, shifts and keyframes. Nothing here copies diffusers' code; it calls it.
"""

import argparse
import json
from pathlib import Path

import diffusers
import torch
from diffusers import MiniMaxH3Scheduler

from golden_io import save_golden
from make_h3_denoise_loop import SEED, load_tiny_transformer, run_case

HYPERFLOW_VIDEO = [1.0, 0.99391, 0.98429, 0.96606, 0.92308, 0.83494, 0.69685, 0.46875, 0.0]
CASES = {
    "hyperflow": dict(keyframes=(), steps=8, shifts=(12.0, 3.0), video=HYPERFLOW_VIDEO, audio=None),
    "lists": dict(keyframes=("first",), steps=4, shifts=(12.0, 3.0), video=[1.0, 0.9, 0.6, 0.25, 0.0],
                  audio=[1.0, 0.8, 0.5, 0.2, 0.0]),
    "turbo4": dict(keyframes=(), steps=4, shifts=(6.0, 3.0), video=None, audio=None),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--transformer", type=Path, default=Path("tests/data/h3_tiny/transformer"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = load_tiny_transformer(args.transformer)

    golden, meta_cases = {}, {}
    for name, c in CASES.items():
        n = c["steps"] + 1  # grid points: the diffusers num_inference_steps of `steps` evaluations
        tensors, steps = run_case(model, name, c["keyframes"], gen, num_inference_steps=n, shifts=c["shifts"],
                                  video_sigmas=c["video"], audio_sigmas=c["audio"])
        assert steps == c["steps"], (name, steps)
        golden.update(tensors)
        for stream, shift, given in (("video", c["shifts"][0], c["video"]), ("audio", c["shifts"][1], c["audio"])):
            sched = MiniMaxH3Scheduler(shift=shift)
            sched.set_timesteps(n, sigmas=given)
            golden[f"{name}.{stream}_sigmas"] = sched.sigmas.clone()
            golden[f"{name}.{stream}_timesteps"] = sched.timesteps.clone()
            if given is not None:
                golden[f"{name}.given_{stream}_sigmas"] = torch.tensor(given, dtype=torch.float64)
        meta_cases[name] = dict(steps=c["steps"], shifts=c["shifts"], keyframes=c["keyframes"])
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "seed": str(SEED),
        "cases": json.dumps(meta_cases),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "golden.safetensors"
    save_golden(path, golden, meta)
    print(f"{path}: {path.stat().st_size} bytes, {len(golden)} tensors")


if __name__ == "__main__":
    main()
