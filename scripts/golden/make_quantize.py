#!/usr/bin/env python3
"""Golden data for the quantization schemes of core/fp8.h and core/quantize.h, from PyTorch's own float8 and int8
arithmetic (CPU, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_quantize.py --out tests/data/quantize

Writes --out/golden.safetensors:
(f32 vectors that hold NaNs are stored as their i32 bit patterns.)
  <fmt>.decode          f32 bits [256]: torch.uint8 code c viewed as torch.float8_<fmt> and cast to float32 (fmt: e4m3, e5m2)
  <fmt>.inputs          f32 bits [n]: encode test values: every finite code value, every midpoint (tie) between neighbouring
                        codes and the f32 values one ulp either side of it, both signs, zeros, the saturation range
                        (max .. max + ulp/2 .. 2 max), infinities, NaNs, f32 subnormals, and random values spread over
                        2^-30 .. 2^20
  <fmt>.codes           u8 [n]: torch's cast of clamp(inputs, -max, max) to torch.float8_<fmt>: the saturating
                        rounding (torch's float8_e5m2 cast alone overflows to infinity; the clamp makes it saturate,
                        and keeps NaN). torch keeps a NaN's sign (0xff for -NaN), CUDA and core/fp8 make 0x7f: the
                        C++ test compares NaN inputs as "some NaN code"
  int8.inputs           f32 bits [n]: ties k + 1/2 for k in -130..129, their f32 neighbours, the clamp range, random values
  int8.codes            i8 [n]: torch.round (half to even) of clamp(inputs, -127, 127)
  rows.x                bf16 [R, C]: activations with an all-zero row, a row below 1e-12, a row with an outlier, a row
                        of exact ties after scaling, and random rows
  rows.<q>.codes        u8 / i8 [R, C]: per-row quantized codes (q: e4m3, int8), torch's ops in the scheme's order:
                        a = clamp(amax(|x|), min=1e-12); inverse = qmax / a; codes = cast(x * inverse)
  rows.<q>.scales       f32 [R]: a / qmax
  gemm.w                bf16 [N, C] weights, quantized per output channel the same way; gemm.bias f32 [N]
  gemm.<q>.y            f32 [R, N]: (exact dot products of the codes, in f64) * (x_scale * w_scale) + bias, in f64
                        from f32 factors, rounded once to f32 (core's fused multiply-add differs by at most one
                        f32 rounding of the last add)
Nothing here copies PyTorch's code; it only calls it.
"""

import argparse
import math
from pathlib import Path

import torch

from golden_io import print_sizes, save_golden

SEED = 20261203
FORMATS = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
QMAX = {"e4m3": 448.0, "int8": 127.0}
MIN_AMAX = 1e-12


def f32(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).to(torch.float32)


def bits(x: torch.Tensor) -> torch.Tensor:
    """f32 values as their i32 bit patterns: NaNs kept exactly (and the file's read-back check can compare them)."""
    return x.contiguous().view(torch.int32)


def next_up_down(x: torch.Tensor) -> torch.Tensor:
    inf = torch.full_like(x, math.inf)
    return torch.cat([torch.nextafter(x, inf), torch.nextafter(x, -inf)])


def encode_inputs(fmt: str, gen: torch.Generator) -> torch.Tensor:
    dtype = FORMATS[fmt]
    values = torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.float32)
    finite = values[torch.isfinite(values) & (values >= 0)].unique().sort().values  # every non-negative code value
    fmax = finite[-1].item()
    mids = ((finite[1:].double() + finite[:-1].double()) / 2).to(torch.float32)  # exact in f32: one more bit
    assert torch.equal(mids.double(), (finite[1:].double() + finite[:-1].double()) / 2)
    top_ulp = (finite[-1] - finite[-2]).item()
    saturation = f32([fmax + top_ulp / 4, fmax + top_ulp / 2, fmax + top_ulp, 2 * fmax, 1e30, 3.0e38])
    tiny = f32([2.0 ** -149, 2.0 ** -140, 2.0 ** -126, 1e-30])  # f32 subnormals and small normals: round to 0
    spread = torch.randn(4096, generator=gen) * torch.exp2(torch.randint(-30, 21, (4096,), generator=gen).float())
    positive = torch.cat([finite, mids, next_up_down(mids), next_up_down(finite[1:]), saturation, tiny,
                          next_up_down(saturation[:2])])
    special = f32([math.inf, -math.inf, math.nan, -math.nan, 0.0, -0.0])
    return torch.cat([positive, -positive, special, spread.to(torch.float32)]).contiguous()


def encode(fmt: str, x: torch.Tensor) -> torch.Tensor:
    fmax = torch.finfo(FORMATS[fmt]).max
    return x.clamp(-fmax, fmax).to(FORMATS[fmt]).view(torch.uint8)


def int8_inputs(gen: torch.Generator) -> torch.Tensor:
    ties = torch.arange(-130, 130, dtype=torch.float64) + 0.5
    ties = ties.to(torch.float32)
    whole = torch.arange(-130, 131, dtype=torch.float32)
    edge = f32([126.49, 126.5, 126.51, 127.0, 127.4, 127.5, 127.6, 128.0, 1e6, 3.0e38, -1e6, -3.0e38, 0.0, -0.0,
                math.inf, -math.inf])
    spread = torch.randn(2048, generator=gen) * 60
    return torch.cat([ties, next_up_down(ties), whole, edge, spread.to(torch.float32)]).contiguous()


def encode_int8(x: torch.Tensor) -> torch.Tensor:
    return torch.round(x.clamp(-127.0, 127.0)).to(torch.int8)


def row_matrix(gen: torch.Generator, rows: int, cols: int) -> torch.Tensor:
    x = torch.randn(rows, cols, generator=gen) * torch.exp2(torch.randint(-8, 8, (rows, 1), generator=gen).float())
    x[0] = 0.0  # all zero: the clamped amax
    x[1] = x[1] * 1e-15  # below the clamp
    x[2, 5] = 1000.0 * x[2].abs().max()  # one outlier squeezes the rest towards zero
    # amax 127 makes the int8 inverse exactly 1, so k + 1/2 (exact in bf16) are ties of the int8 grid.
    x[3] = (torch.arange(cols) % 254 - 127).float() + 0.5
    x[3, 0] = 127.0
    return x.to(torch.bfloat16)


def quantize_rows(x: torch.Tensor, q: str):
    x = x.float()
    a = x.abs().amax(dim=1).clamp(min=MIN_AMAX)
    inverse = torch.tensor(QMAX[q], dtype=torch.float32) / a  # [R]
    scaled = x * inverse[:, None]
    codes = encode("e4m3", scaled) if q == "e4m3" else encode_int8(scaled)
    return codes.contiguous(), (a / QMAX[q]).contiguous()


def code_values(codes: torch.Tensor, q: str) -> torch.Tensor:
    return codes.view(torch.float8_e4m3fn).double() if q == "e4m3" else codes.double()


def reference_gemm(xq, xs, wq, ws, bias, q: str) -> torch.Tensor:
    acc = (code_values(xq, q) @ code_values(wq, q).T).to(torch.float32)  # [R, N]: exact (f64 of exact products)
    scale = xs[:, None] * ws[None, :]  # f32 products, as the epilogue rounds them
    return (acc.double() * scale.double() + bias.double()[None, :]).to(torch.float32).contiguous()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    args.out.mkdir(parents=True, exist_ok=True)

    golden = {}
    for fmt, dtype in FORMATS.items():
        golden[f"{fmt}.decode"] = bits(torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.float32))
        x = encode_inputs(fmt, gen)
        golden[f"{fmt}.inputs"] = bits(x)
        golden[f"{fmt}.codes"] = encode(fmt, x).contiguous()
        print(f"{fmt}: {x.numel()} encode values, max {torch.finfo(dtype).max}")
    x = int8_inputs(gen)
    golden["int8.inputs"], golden["int8.codes"] = bits(x), encode_int8(x).contiguous()

    rows, cols, n = 12, 96, 40
    x = row_matrix(gen, rows, cols)
    w = (torch.randn(n, cols, generator=gen) / math.sqrt(cols)).to(torch.bfloat16)
    w[3] = 0.0  # an all-zero output channel
    bias = torch.randn(n, generator=gen).to(torch.bfloat16).to(torch.float32)
    golden["rows.x"], golden["gemm.w"], golden["gemm.bias"] = x.contiguous(), w.contiguous(), bias.contiguous()
    for q in ("e4m3", "int8"):
        xq, xs = quantize_rows(x, q)
        wq, ws = quantize_rows(w, q)
        golden[f"rows.{q}.codes"], golden[f"rows.{q}.scales"] = xq, xs
        golden[f"gemm.{q}.w_codes"], golden[f"gemm.{q}.w_scales"] = wq, ws
        golden[f"gemm.{q}.y"] = reference_gemm(xq, xs, wq, ws, bias, q)

    meta = {"torch_version": torch.__version__, "seed": str(SEED), "min_amax": repr(MIN_AMAX)}
    save_golden(args.out / "golden.safetensors", golden, meta)
    print_sizes(args.out)


if __name__ == "__main__":
    main()
