#!/usr/bin/env python3
"""Golden FP8 transformer files as ComfyUI keeps them, with the bf16 weights ComfyUI computes from them
(torch 2.15, CPU, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_fp8_files.py --out tests/data/h3_fp8

From the tiny transformer of tests/data/h3_tiny (diffusers names), every 2-D weight of the transformer
blocks is quantized by torch's own float8 casts, one file per ComfyUI convention:
  e4m3_tensor.safetensors  the older "scaled fp8" files: float8_e4m3fn codes of w / s with one scale per tensor,
                           s = amax / 448, stored as <module>.scale_weight (f32 [1]), an unused
                           <module>.scale_input and the `scaled_fp8` marker
  e5m2_rows.safetensors    comfy-kitchen's layers with the per-channel convention: float8_e5m2 codes of w / s_row,
                           s_row = amax(row) / 57344, stored as <module>.weight_scale (f32 [rows, 1]), an unused
                           <module>.input_scale and <module>.comfy_quant ({"format": "float8_e5m2"} as u8)
Every other tensor is the folder's, as it is.

golden.safetensors holds, per file f and quantized weight k, `f/k`: the bf16 weight ComfyUI dequantizes to,
`codes.to(bfloat16) * scale` in f32 rounded to bf16 (TensorCoreFP8Layout.dequantize with orig_dtype bf16).
"""

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from golden_io import canonicalize_header, save_golden


def quantize(w: torch.Tensor, dtype, per_row: bool):
    top = torch.finfo(dtype).max
    if per_row:
        scale = (w.abs().amax(dim=1, keepdim=True) / top).clamp_min(1e-12)  # [rows, 1]
    else:
        scale = (w.abs().amax() / top).clamp_min(1e-12).reshape(1)
    codes = (w / scale).to(dtype)
    return codes, scale.to(torch.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--transformer", type=Path, default=Path("tests/data/h3_tiny/transformer"))
    args = ap.parse_args()
    state = {}
    for shard in sorted(args.transformer.glob("*.safetensors")):
        state.update(load_file(shard))
    args.out.mkdir(parents=True, exist_ok=True)
    golden = {}
    for name, dtype, per_row in (("e4m3_tensor", torch.float8_e4m3fn, False), ("e5m2_rows", torch.float8_e5m2, True)):
        out = {}
        for key, w in state.items():
            if not (key.startswith("transformer_blocks.") and key.endswith(".weight") and w.ndim == 2):
                out[key] = w
                continue
            module = key[: -len(".weight")]
            codes, scale = quantize(w.float(), dtype, per_row)
            out[key] = codes
            if per_row:
                out[module + ".weight_scale"] = scale
                out[module + ".input_scale"] = torch.ones(1)
                blob = json.dumps({"format": "float8_e5m2"}).encode()
                out[module + ".comfy_quant"] = torch.tensor(list(blob), dtype=torch.uint8)
            else:
                out[module + ".scale_weight"] = scale
                out[module + ".scale_input"] = torch.ones(1)
            # ComfyUI's dequantize: the codes in bf16 times the f32 scale, computed in f32, kept as bf16.
            golden[f"{name}/{key}"] = (codes.to(torch.bfloat16) * scale).to(torch.bfloat16)
        if not per_row:
            out["scaled_fp8"] = torch.empty(0, dtype=torch.float8_e4m3fn)
        path = args.out / f"{name}.safetensors"
        save_file({k: v.contiguous() for k, v in sorted(out.items())}, str(path), metadata={"format": "pt"})
        canonicalize_header(path)
        print(f"{path}: {path.stat().st_size} bytes, {len(out)} tensors")
    meta = {"torch_version": torch.__version__}
    save_golden(args.out / "golden.safetensors", {k: v.contiguous() for k, v in golden.items()}, meta)
    print(f"{args.out / 'golden.safetensors'}: {len(golden)} dequantized weights")


if __name__ == "__main__":
    main()
