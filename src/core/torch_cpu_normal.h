// PyTorch's CPU `torch.randn` reproduced bit for bit: a fresh `torch.Generator().manual_seed(seed)`
// (mt19937) and the `normal_` fill of a contiguous fp32 tensor. The MiniMax-H3 pipeline samples the
// video VAE posterior with such a generator seeded 42, so its noise depends only on the latent
// shape and can be drawn here instead of injected (REF2VA.md §1.3 step 6).
//
// Which fill torch runs depends on the element count and on the CPU kernel torch dispatches to:
//   n >= 16, AVX2 kernels (torch.backends.cpu.get_cpu_capability() == "AVX2", the goldens' machine):
//            `normal_fill_AVX2`: uniforms u = (mt() & 0xFFFFFF) · 2^-24, Box–Muller in blocks of 16
//            with avx_mathfun's fp32 log and sincos, then `fma(r·cos, std, mean)`; a ragged tail
//            redraws its last 16 values.
//   n >= 16, any other kernel ("DEFAULT", and "AVX512", whose build does not define the AVX2 path):
//            `normal_fill`: the same uniforms and blocks, Box–Muller with libm's logf / cosf / sinf
//            and θ = 2π·u rounded from double. The two differ in the last bit of ~40% of values.
//   n <  16: the serial kernel, one `normal_distribution<double>` per element (53-bit uniforms,
//            Box–Muller in double with log1p, no caching across elements), rounded to fp32.
// The engine's own Philox RNG (core/random.h) is a different generator; this one exists only for
// parity with the reference's fixed-seed draws.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace orochi {

// The 32-bit Mersenne Twister exactly as torch seeds and steps it (at::mt19937).
class TorchMt19937 {
 public:
  explicit TorchMt19937(uint64_t seed);
  uint32_t next();

 private:
  std::array<uint32_t, 624> state_{};
  int index_ = 624;
};

// The CPU kernel torch's randn ran with (see above); kAvx2 is the default.
enum class TorchCpuKernel { kAvx2, kScalar };

// One 16-value block of torch's AVX2 Box–Muller: on entry d[0..15] are uniforms in [0, 1); on
// exit d[j] = r·cos θ and d[j+8] = r·sin θ with r = sqrt(−2·log(1 − d[j])) and θ = 2π·d[j+8],
// computed with the same fp32 operations as avx_mathfun.h (exposed for the bit-exact tests).
void torch_avx2_normal_block16(float* d);

// The same block as `normal_fill_16` (the non-AVX2 kernels) computes it.
void torch_scalar_normal_block16(float* d);

// `torch.randn(shape, generator=torch.Generator().manual_seed(seed))` on the CPU in fp32: a host
// f32 tensor, the draw in C order.
Tensor torch_cpu_randn(const Shape& shape, uint64_t seed, TorchCpuKernel kernel = TorchCpuKernel::kAvx2);

}  // namespace orochi
