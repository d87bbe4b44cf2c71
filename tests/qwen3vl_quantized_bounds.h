// How far the GPU's quantized Qwen3-VL text stack (--set conditioner-precision) may be from its CPU
// emulation (qwen3vl::emulate_quantization) on the tiny golden model, as a multiple of sigma, the
// emulation's own distance to the f32 forward (its quantization error). Shared by the GPU test
// (tests/cuda/test_qwen3vl_gpu_precision.cpp) and the CPU test that checks the bound separates a
// correct bf16 implementation from a wrong scale (tests/test_qwen3vl_precision.cpp).
//
// Why sigma and not bf16's band: on this stack (hidden 64, 19 tokens, every linear quantized) any
// bf16-level difference of a linear's input flips some codes by a whole e4m3 / int8 step, and the
// flipped rows feed every later linear, so after a layer the two forwards' quantization errors
// are mostly independent. Measured on the CPU with a model of the GPU's bf16 activations (residual
// stream, norms, q/k/v, RoPE, attention, SwiGLU rounded where the GPU rounds them; same scheme):
// 0.84-0.89 sigma from the emulation for fp8, 1.01-1.08 sigma for int8, over 12 runs with f32-level
// noise before each rounding; the H200 measured 0.91 sigma (6.96e-2) and 1.03 sigma (2.27e-2).
// Wrong wiring is outside: one linear's output 10% too large in every layer 1.47 sigma (fp8) /
// 4.5 sigma (int8), every activation scale 5% off 2.2 / 6.7 sigma, a row's scale taken from the
// next token 10 / 36 sigma, per-tensor weight scales 1.40 / 1.53 sigma.
#pragma once

#include "core/precision.h"

namespace orochi::testing {

inline double qwen3vl_gpu_to_emulation_bound(Precision p) { return p == Precision::kFp8 ? 1.1 : 1.25; }

}  // namespace orochi::testing
