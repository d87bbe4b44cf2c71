// Replicate padding and BigVGAN's anti-aliased (Kaiser-sinc low-pass) resamplers. The resamplers
// read the replicate-padded signal through a clamped index instead of materializing the padding.
#include <algorithm>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_audio.h"

namespace orochi::cpu {
namespace {

void require_signal(const Tensor& x, const char* what) {
  detail::require_f32_contiguous(x, what);
  OROCHI_CHECK(x.ndim() == 3 && x.dim(2) >= 1, what, " must be [B, C, L] with L >= 1, got ", x.describe());
}

void require_filter(const Tensor& filter, int64_t ratio, const char* what) {
  detail::require_f32_contiguous(filter, what);
  OROCHI_CHECK(filter.ndim() == 1 && filter.numel() >= ratio && ratio >= 1, what, " must be a vector of at least ",
               ratio, " taps, got ", filter.describe());
}

// Sample i of x padded on the left by `left` copies of x[0] (and on the right by copies of x[L-1]).
inline float replicated(const float* row, int64_t length, int64_t i, int64_t left) {
  return row[std::clamp<int64_t>(i - left, 0, length - 1)];
}

}  // namespace

Tensor pad_replicate1d(const Tensor& x, int64_t left, int64_t right) {
  require_signal(x, "pad_replicate1d input");
  OROCHI_CHECK(left >= 0 && right >= 0, "pad_replicate1d: negative padding ", left, ", ", right);
  const int64_t rows = x.dim(0) * x.dim(1), L = x.dim(2), Lp = L + left + right;
  Tensor y = Tensor::empty({x.dim(0), x.dim(1), Lp}, DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < Lp; ++i) py[r * Lp + i] = replicated(px + r * L, L, i, left);
  return y;
}

Tensor upsample1d_lowpass(const Tensor& x, const Tensor& filter, int64_t ratio) {
  require_signal(x, "upsample1d_lowpass input");
  require_filter(filter, ratio, "upsample1d_lowpass filter");
  const int64_t K = filter.numel(), rows = x.dim(0) * x.dim(1), L = x.dim(2), Lout = ratio * L;
  const int64_t pad = K / ratio - 1;                        // replicated inputs each side
  const int64_t crop_left = pad * ratio + (K - ratio) / 2;  // of the transposed conv's output
  const int64_t padded_length = L + 2 * pad;
  Tensor y = Tensor::empty({x.dim(0), x.dim(1), Lout}, DType::kF32);
  const float* px = x.data<float>();
  const float* f = filter.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (rows * Lout * K > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = px + r * L;
    for (int64_t t = 0; t < Lout; ++t) {
      // Transposed conv: padded input j lands on j·ratio + k; output t is position t + crop_left.
      const int64_t full = t + crop_left;
      float acc = 0.0f;
      for (int64_t k = full % ratio; k < K; k += ratio) {
        const int64_t j = (full - k) / ratio;
        if (j >= 0 && j < padded_length) acc += f[k] * replicated(in, L, j, pad);
      }
      py[r * Lout + t] = static_cast<float>(ratio) * acc;
    }
  }
  return y;
}

Tensor downsample1d_lowpass(const Tensor& x, const Tensor& filter, int64_t ratio) {
  require_signal(x, "downsample1d_lowpass input");
  require_filter(filter, ratio, "downsample1d_lowpass filter");
  const int64_t K = filter.numel(), rows = x.dim(0) * x.dim(1), L = x.dim(2);
  const int64_t pad_left = K / 2 - (K % 2 == 0 ? 1 : 0), pad_right = K / 2;
  const int64_t Lout = (L + pad_left + pad_right - K) / ratio + 1;
  Tensor y = Tensor::empty({x.dim(0), x.dim(1), Lout}, DType::kF32);
  const float* px = x.data<float>();
  const float* f = filter.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (rows * Lout * K > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = px + r * L;
    for (int64_t t = 0; t < Lout; ++t) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += f[k] * replicated(in, L, t * ratio + k, pad_left);
      py[r * Lout + t] = acc;
    }
  }
  return y;
}

}  // namespace orochi::cpu
