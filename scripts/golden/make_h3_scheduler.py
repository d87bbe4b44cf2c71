#!/usr/bin/env python3
"""Golden generator for the MiniMax-H3 scheduler (diffusers `MiniMaxH3Scheduler`, CPU, fp32, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_scheduler.py --out tests/data/h3_scheduler

Writes --out/golden.safetensors:
  cases                 f64 [n, 2]: (num_inference_steps, shift) of each schedule case
  sigmas.<i>            f32: `scheduler.sigmas` after `set_timesteps(N)` with shift s
  timesteps.<i>         f32: `scheduler.timesteps` (t = 1 - sigma[:-1], t = 1 clean)
  step.case, step.index i64 [k]: which case and step index each `step()` golden uses
  step.sample, step.velocity  f32 [rows, 32]: random x_t and model output (shared by every step golden)
  step.out.<j>          f32 [rows, 32]: `scheduler.step(velocity, timesteps[index], sample).prev_sample`
  noise.t               f32 [k]: `scale_noise` levels; noise.out.<j>: scale_noise(sample, t_j, velocity)

Cases: N in {2, 3, 9, 21} x shifts {12, 3, 6}, plus shift 7.7 (not a float32 value: the shift is a Python float
that torch rounds per op) and (N = 200, shift = 1e5), where the float32 shift collapses neighbours and
`unique_consecutive` shortens the grid. Nothing here copies diffusers' code; it only calls it.
"""

import argparse
import json
from pathlib import Path

import diffusers
import numpy as np
import torch
from diffusers import MiniMaxH3Scheduler

from golden_io import save_golden


SEED = 20260824
CASES = [(n, s) for s in (12.0, 3.0, 6.0) for n in (2, 3, 9, 21)] + [(9, 7.7), (21, 7.7), (200, 1e5)]
# (case, step index) pairs for step(): first, middle, and the last step (to sigma = 0) of N = 9 / 21.
STEP_CASES = [((9, 3.0), 0), ((9, 3.0), 4), ((9, 3.0), 7), ((21, 12.0), 0), ((21, 12.0), 13), ((21, 12.0), 19),
              ((9, 7.7), 5)]
NOISE_LEVELS = [0.0, 0.3, 0.999, 1.0]
ROWS, CHANNELS = 24, 32


def schedule(n: int, shift: float) -> MiniMaxH3Scheduler:
    sched = MiniMaxH3Scheduler(shift=shift)
    sched.set_timesteps(n)
    return sched


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    args.out.mkdir(parents=True, exist_ok=True)

    golden = {"cases": torch.tensor(CASES, dtype=torch.float64)}
    for i, (n, s) in enumerate(CASES):
        sched = schedule(n, s)
        assert sched.sigmas.dtype == torch.float32 and sched.timesteps.dtype == torch.float32
        golden[f"sigmas.{i}"] = sched.sigmas.clone()
        golden[f"timesteps.{i}"] = sched.timesteps.clone()
        print(f"case {i}: N={n} shift={s}: {sched.sigmas.numel()} sigmas", sched.sigmas.tolist() if n <= 9 else "")
    assert golden[f"sigmas.{CASES.index((200, 1e5))}"].numel() < 200, "the collapse case no longer collapses"

    gen = torch.Generator().manual_seed(SEED)
    sample = torch.randn((ROWS, CHANNELS), generator=gen, dtype=torch.float32)
    velocity = torch.randn((ROWS, CHANNELS), generator=gen, dtype=torch.float32)
    golden["step.sample"], golden["step.velocity"] = sample, velocity
    golden["step.case"] = torch.tensor([CASES.index(c) for c, _ in STEP_CASES], dtype=torch.int64)
    golden["step.index"] = torch.tensor([k for _, k in STEP_CASES], dtype=torch.int64)
    for j, (case, k) in enumerate(STEP_CASES):
        sched = schedule(*case)
        sched.set_begin_index(k)  # start at step k, as a pipeline resuming mid-schedule would
        out = sched.step(velocity, sched.timesteps[k], sample, return_dict=False)[0]
        assert out.dtype == torch.float32
        golden[f"step.out.{j}"] = out.clone()

    golden["noise.t"] = torch.tensor(NOISE_LEVELS, dtype=torch.float32)
    sched = schedule(9, 3.0)
    for j, t in enumerate(NOISE_LEVELS):
        golden[f"noise.out.{j}"] = sched.scale_noise(sample, t, velocity).clone()

    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "seed": str(SEED),
        "cases": json.dumps(CASES),
        "step_cases": json.dumps(STEP_CASES),
    }
    path = args.out / "golden.safetensors"
    save_golden(path, golden, meta)
    print(f"{path}: {path.stat().st_size} bytes, {len(golden)} tensors")


if __name__ == "__main__":
    main()
