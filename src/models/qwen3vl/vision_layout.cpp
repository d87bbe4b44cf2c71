#include "models/qwen3vl/vision_layout.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orochi::qwen3vl {
namespace {

// One axis of the align_corners bilinear resampling, in fp32 as transformers computes it: source
// coordinate src = i·(side−1) / max(n−1, 1), taps floor(src) and floor(src)+1 clamped to the table,
// weights 1 − |src − floor − offset| (clamped at 0).
struct AxisTaps {
  int64_t tap[2];
  float weight[2];
};

AxisTaps axis_taps(int64_t i, int64_t n, int64_t side) {
  const float src = static_cast<float>(i) * static_cast<float>(side - 1) / static_cast<float>(std::max<int64_t>(n - 1, 1));
  const float floor = std::floor(src);
  AxisTaps a;
  for (int o = 0; o < 2; ++o) {
    a.tap[o] = std::clamp<int64_t>(static_cast<int64_t>(floor) + o, 0, side - 1);
    const float distance = std::abs(src - floor - static_cast<float>(o));
    a.weight[o] = std::max(1.0f - distance, 0.0f);
  }
  return a;
}

// Calls f(row, col) for every patch of `g` in merge order (frames repeat the frame's order).
template <typename F>
void for_each_patch(const GridThw& g, int64_t merge, F&& f) {
  for (int64_t t = 0; t < g.t; ++t)
    for (int64_t br = 0; br < g.h / merge; ++br)
      for (int64_t bc = 0; bc < g.w / merge; ++bc)
        for (int64_t ir = 0; ir < merge; ++ir)
          for (int64_t ic = 0; ic < merge; ++ic) f(br * merge + ir, bc * merge + ic);
}

}  // namespace

Status validate_vision_inputs(const VisionConfig& c, const Tensor& pixel_values, const std::vector<GridThw>& grids) {
  if (grids.empty()) return invalid_argument("the vision tower needs at least one image or video grid");
  int64_t patches = 0;
  for (size_t i = 0; i < grids.size(); ++i) {
    const GridThw& g = grids[i];
    if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % c.spatial_merge_size != 0 || g.w % c.spatial_merge_size != 0)
      return invalid_argument("grid " + std::to_string(i) + " (t " + std::to_string(g.t) + ", h " +
                              std::to_string(g.h) + ", w " + std::to_string(g.w) +
                              ") must be positive with h and w multiples of the merge size " +
                              std::to_string(c.spatial_merge_size) + "; use the processor's grids");
    if (g.t > (int64_t{1} << 20) || g.h > (int64_t{1} << 20) || g.w > (int64_t{1} << 20))
      return invalid_argument("grid " + std::to_string(i) + " is implausibly large");
    patches += patch_count(g);
  }
  if (!pixel_values.defined() || pixel_values.ndim() != 2 || pixel_values.dim(1) != c.patch_values() ||
      (pixel_values.dtype() != DType::kF32 && pixel_values.dtype() != DType::kBF16))
    return shape_mismatch("pixel_values must be f32 or bf16 [patches, " + std::to_string(c.patch_values()) +
                          "] (3 x " + std::to_string(c.temporal_patch_size) + " x " + std::to_string(c.patch_size) +
                          " x " + std::to_string(c.patch_size) + " per patch), got " +
                          (pixel_values.defined() ? pixel_values.describe() : std::string("nothing")));
  if (pixel_values.dim(0) != patches)
    return shape_mismatch("pixel_values has " + std::to_string(pixel_values.dim(0)) + " patches but the grids hold " +
                          std::to_string(patches) + "; pass the processor's pixel values with its grids");
  return Status::ok();
}

PositionTaps position_taps(const VisionConfig& c, const std::vector<GridThw>& grids) {
  const int64_t side = c.position_grid_side(), m = c.spatial_merge_size;
  PositionTaps taps;
  for (const GridThw& g : grids) {
    for_each_patch(g, m, [&](int64_t row, int64_t col) {
      const AxisTaps h = axis_taps(row, g.h, side), w = axis_taps(col, g.w, side);
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
          taps.index.push_back(h.tap[a] * side + w.tap[b]);
          taps.weight.push_back(h.weight[a] * w.weight[b]);
        }
    });
  }
  return taps;
}

cpu::RopeTable vision_rope_table(const VisionConfig& c, const std::vector<GridThw>& grids) {
  const int64_t D = c.head_dim(), F = D / 4;
  const Tensor inv_tensor = cpu::rope_inv_freq(static_cast<int>(F), static_cast<float>(c.rope_theta));
  const float* inv = inv_tensor.data<float>();
  int64_t N = 0;
  for (const GridThw& g : grids) N += patch_count(g);
  cpu::RopeTable table{Tensor::uninitialized({N, D}, DType::kF32), Tensor::uninitialized({N, D}, DType::kF32)};
  float* pc = table.cos.data<float>();
  float* ps = table.sin.data<float>();
  int64_t n = 0;
  for (const GridThw& g : grids)
    for_each_patch(g, c.spatial_merge_size, [&](int64_t row, int64_t col) {
      for (int64_t k = 0; k < F; ++k) {
        const float angles[2] = {static_cast<float>(row) * inv[k], static_cast<float>(col) * inv[k]};
        for (int axis = 0; axis < 2; ++axis)
          for (int copy = 0; copy < 2; ++copy) {
            const int64_t slot = n * D + copy * 2 * F + axis * F + k;
            pc[slot] = std::cos(angles[axis]);
            ps[slot] = std::sin(angles[axis]);
          }
      }
      ++n;
    });
  return table;
}

std::vector<int64_t> attention_segments(const std::vector<GridThw>& grids) {
  std::vector<int64_t> lengths;
  for (const GridThw& g : grids)
    for (int64_t t = 0; t < g.t; ++t) lengths.push_back(g.h * g.w);
  return lengths;
}

}  // namespace orochi::qwen3vl
