"""Counter-based N(mean, std) in torch: Orochi's Philox4x32-10 + Box-Muller (src/core/random.cpp,
src/backends/cuda/random_fill.cu) ported to torch integer math, so that a reference model in a Python
framework can be filled with exactly the weights Orochi generates on the GPU from a seed.

Element i of stream s under seed k is a pure function of (k, s, i); verified on the device against
cuda::fill_normal (max |diff| 4.8e-7, the last ulp of log/sin/cos). Used by compare_h3_full.py and
compare_qwen3vl_full.py.
"""

import numpy as np
import torch

MASK32 = 0xFFFFFFFF
PHILOX_MUL = (0xD2511F53, 0xCD9E8D57)
PHILOX_WEYL = (0x9E3779B9, 0xBB67AE85)
TWO_PI_F32 = float(np.float32(6.28318530717958647692))


def philox_words01(pairs: torch.Tensor, stream: int, seed: int):
    """Words 0 and 1 of Philox4x32-10 for counters (pair lo, pair hi, stream lo, stream hi), key = seed.

    uint32 values live in int64 tensors. A 32x32-bit product can pass 2**63 and wrap negative; the
    two's-complement bits are still the unsigned product's, so `>> 32 & MASK32` is its high word.
    """
    c0, c1 = pairs & MASK32, (pairs >> 32) & MASK32
    c2 = torch.full_like(pairs, stream & MASK32)
    c3 = torch.full_like(pairs, (stream >> 32) & MASK32)
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(10):
        p0 = c0 * PHILOX_MUL[0]
        p1 = c2 * PHILOX_MUL[1]
        n0 = ((p1 >> 32) & MASK32) ^ c1 ^ k0
        n2 = ((p0 >> 32) & MASK32) ^ c3 ^ k1
        c0, c1, c2, c3 = n0, p1 & MASK32, n2, p0 & MASK32
        k0, k1 = (k0 + PHILOX_WEYL[0]) & MASK32, (k1 + PHILOX_WEYL[1]) & MASK32
    return c0, c1


def f32(x: torch.Tensor) -> torch.Tensor:
    """Rounds an f64 tensor to the nearest f32 value (kept in f64): one C++ float operation."""
    return x.float().double()


def counter_normal_pairs(first_pair: int, n_pairs: int, stream: int, seed: int, device) -> tuple:
    """Box-Muller normals (even index, odd index) of pairs [first_pair, first_pair + n_pairs), in f64
    holding f32 values. Every step is done in f64 and rounded to f32 where the C++ rounds, so the
    result is the f32 computation's (log/cos/sin correctly rounded; libm may differ by an ulp)."""
    pairs = torch.arange(first_pair, first_pair + n_pairs, dtype=torch.int64, device=device)
    r0, r1 = philox_words01(pairs, stream, seed)
    del pairs
    u0 = ((r0 >> 8).double() + 1.0) * (1.0 / 16777216.0)  # exact: (x >> 8) + 1 <= 2**24
    u1 = ((r1 >> 8).double() + 1.0) * (1.0 / 16777216.0)
    del r0, r1
    radius = f32(torch.sqrt(-2.0 * f32(torch.log(u0))))
    angle = f32(TWO_PI_F32 * u1)
    return f32(radius * f32(torch.cos(angle))), f32(radius * f32(torch.sin(angle)))


def fill_normal_(out: torch.Tensor, seed: int, stream: int, mean: float = 0.0, std: float = 1.0,
                 chunk_pairs: int = 1 << 25) -> torch.Tensor:
    """out.view(-1)[i] = mean + std * counter_normal(seed, stream, i), as cuda::fill_normal writes it
    (value in f32 with a fused multiply-add, then rounded to out's dtype). Chunked: any size fits."""
    flat = out.view(-1)
    n = flat.numel()
    for first in range(0, (n + 1) // 2, chunk_pairs):
        count = min(chunk_pairs, (n + 1) // 2 - first)
        z0, z1 = counter_normal_pairs(first, count, stream, seed, out.device)
        z = torch.stack((z0, z1), dim=-1).view(-1)
        del z0, z1
        begin, end = 2 * first, min(n, 2 * (first + count))
        flat[begin:end] = (mean + std * z[: end - begin]).float().to(out.dtype)
    return out


def normal_tensor(shape, seed: int, stream: int, device="cpu") -> torch.Tensor:
    """core/random.h normal_tensor: f32 N(0, 1), element i = counter_normal(seed, stream, i)."""
    return fill_normal_(torch.empty(shape, dtype=torch.float32, device=device), seed, stream)
