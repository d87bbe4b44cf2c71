#include "models/h3/adaln_curve.h"

#include <algorithm>
#include <cmath>

namespace orochi::h3 {

bool has_adaln_curve(const weights::Checkpoint& checkpoint, const KeyLayout& layout) {
  return checkpoint.contains(layout.prefix + kAdalnTableKey);
}

Status apply_adaln_curve(const weights::Checkpoint& checkpoint, const KeyLayout& layout, H3Config& config) {
  const std::string key = layout.prefix + kAdalnTableKey;
  const weights::TensorInfo* info = checkpoint.info(key);
  if (info == nullptr) return not_found(checkpoint.path() + " holds no " + key);
  if (info->shape.size() != 2 || info->shape[0] < 2 || info->shape[1] < 1 || !dtype_is_float(info->dtype))
    return shape_mismatch(key + " is " + std::string(dtype_name(info->dtype)) + " " + shape_to_string(info->shape) +
                          ": the curve-form AdaLN table must be a float [G, r] with G >= 2 grid points and r >= 1");
  config.adaln_curve_points = info->shape[0];
  config.time_embed_dim = info->shape[1];
  return Status::ok();
}

Tensor adaln_curve_input(const Tensor& table, const Tensor& timesteps) {
  const Tensor rows = table.to(DType::kF32).contiguous();    // [G, r]
  const Tensor ts = timesteps.to(DType::kF32).contiguous();  // [n_t]
  const int64_t G = rows.dim(0), r = rows.dim(1), n_t = ts.numel();
  OROCHI_CHECK(G >= 2, "curve-form AdaLN table with ", G, " rows");
  Tensor out = Tensor::empty({n_t, r}, DType::kF32);  // [n_t, r]
  for (int64_t i = 0; i < n_t; ++i) {
    const float pos = std::clamp(ts.data<float>()[i], 0.0f, 1.0f) * static_cast<float>(G - 1);
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(pos)), G - 2);
    const float f = pos - static_cast<float>(i0);
    const float* a = rows.data<float>() + i0 * r;
    const float* b = a + r;
    // (1 - f)·a + f·b: exactly a row at a grid point (f = 0, or f = 1 at t = 1).
    for (int64_t k = 0; k < r; ++k) out.data<float>()[i * r + k] = (1.0f - f) * a[k] + f * b[k];
  }
  return out;
}

std::string describe_adaln_curve(const H3Config& config) {
  return "pruned curve-form AdaLN (a " + std::to_string(config.adaln_curve_points) + " x " +
         std::to_string(config.time_embed_dim) +
         " timestep table in place of the time MLP: an approximation of it, not bit-equal to the released model)";
}

}  // namespace orochi::h3
