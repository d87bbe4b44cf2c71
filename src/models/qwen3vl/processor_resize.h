// The resize inside Qwen3-VL's image and video processors (transformers 5.24's torchvision backend):
// torchvision `resize(uint8 image, BICUBIC, antialias=True)`, which on the CPU is PyTorch's native
// uint8 antialiased bicubic (`_upsample_bicubic2d_aa`, the Pillow-SIMD algorithm). Reproduced
// bit-exactly:
//   - per axis, in double: scale = in / out, support = 2·scale (2 when enlarging), the Keys cubic
//     with a = -0.5 evaluated at (j + xmin - center + 0.5) / max(scale, 1), weights normalized to
//     sum 1, then converted to int16 fixed point at the largest precision (< 22 bits) that keeps the
//     axis's largest weight below 2^15;
//   - horizontal pass first (into a uint8 image), then vertical; each output is
//     clamp((2^(p-1) + Σ pixel·weight) >> p, 0, 255) in integer arithmetic.
// An axis whose size does not change is not resampled; an image whose size does not change is
// returned as is (torchvision returns early).
#pragma once

#include <cstdint>
#include <vector>

namespace orochi::qwen3vl {

// One axis's resampling plan: output i reads inputs [first[i], first[i] + count[i]) with
// weights[i * taps .. i * taps + count[i]).
struct ResizeAxisPlan {
  std::vector<int64_t> first, count;
  std::vector<int16_t> weights;  // [out, taps]
  int64_t taps = 0;
  unsigned precision = 0;  // fixed-point bits of the weights
};
ResizeAxisPlan bicubic_antialias_plan(int64_t in_size, int64_t out_size);

// rgb: uint8 [H, W, 3] -> uint8 [out_h, out_w, 3]. Sizes must be positive (the caller checks).
std::vector<uint8_t> resize_rgb_bicubic_antialias(const uint8_t* rgb, int64_t height, int64_t width, int64_t out_height,
                                                  int64_t out_width);

}  // namespace orochi::qwen3vl
