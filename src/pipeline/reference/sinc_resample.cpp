#include "pipeline/reference/sinc_resample.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace orochi::pipeline::reference {
namespace {

constexpr double kLowpassFilterWidth = 6;
constexpr double kRolloff = 0.99;

}  // namespace

Expected<SincKernel> sinc_resample_kernel(int64_t orig_rate, int64_t new_rate) {
  if (orig_rate <= 0 || new_rate <= 0)
    return invalid_argument("cannot resample from " + std::to_string(orig_rate) + " Hz to " +
                            std::to_string(new_rate) + " Hz: both rates must be positive");
  const int64_t g = std::gcd(orig_rate, new_rate);
  SincKernel k;
  k.orig = orig_rate / g;
  k.target = new_rate / g;
  const double base = static_cast<double>(std::min(k.orig, k.target)) * kRolloff;
  k.width = static_cast<int64_t>(std::ceil(kLowpassFilterWidth * static_cast<double>(k.orig) / base));
  k.taps = 2 * k.width + k.orig;
  k.weights.resize(k.target * k.taps);
  const double scale = base / static_cast<double>(k.orig);
  for (int64_t j = 0; j < k.target; ++j) {
    // torchaudio divides the int64 phase offsets into the default fp32 dtype, then adds the fp64 tap
    // offsets: the phase term carries fp32 rounding.
    const double phase = static_cast<double>(static_cast<float>(-j) / static_cast<float>(k.target));
    for (int64_t i = 0; i < k.taps; ++i) {
      const double idx = static_cast<double>(i - k.width) / static_cast<double>(k.orig);
      double t = phase + idx;
      t *= base;
      t = std::clamp(t, -kLowpassFilterWidth, kLowpassFilterWidth);
      const double c = std::cos(t * M_PI / kLowpassFilterWidth / 2);
      const double window = c * c;
      t *= M_PI;
      const double sinc = t == 0 ? 1.0 : std::sin(t) / t;
      k.weights[j * k.taps + i] = static_cast<float>(sinc * (window * scale));
    }
  }
  return k;
}

int64_t sinc_resample_length(int64_t length, int64_t orig_rate, int64_t new_rate) {
  if (orig_rate == new_rate) return length;
  const int64_t g = std::gcd(orig_rate, new_rate);
  // torchaudio's target_length: ceil(torch.as_tensor(new * length / orig)) on the reduced rates, where
  // as_tensor makes the Python float an fp32 tensor first. From about 2^19 output samples on, fp32
  // can round a quotient just above an integer down to it, and torchaudio keeps one sample less.
  const double quotient = static_cast<double>(new_rate / g * length) / static_cast<double>(orig_rate / g);
  return static_cast<int64_t>(std::ceil(static_cast<float>(quotient)));
}

Expected<Tensor> sinc_resample(const Tensor& waveform, int64_t orig_rate, int64_t new_rate) {
  if (!waveform.defined() || waveform.dtype() != DType::kF32 || waveform.ndim() != 2)
    return invalid_argument("resampling needs an f32 [channels, samples] waveform, got " +
                            (waveform.defined() ? waveform.describe() : std::string("nothing")));
  OROCHI_ASSIGN_OR_RETURN(const SincKernel k, sinc_resample_kernel(orig_rate, new_rate));
  if (orig_rate == new_rate) return waveform.contiguous();
  const Tensor in = waveform.contiguous();
  const int64_t channels = in.dim(0), length = in.dim(1);
  const int64_t out_length = sinc_resample_length(length, orig_rate, new_rate);
  Tensor out = Tensor::uninitialized({channels, out_length}, DType::kF32);  // [C, N']
  const float* src = in.data<float>();
  float* dst = out.data<float>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t o = 0; o < out_length; ++o) {
      // Output o is phase o % target of block o / target: conv1d at stride `orig` over the input
      // padded with `width` zeros on the left.
      const int64_t block = o / k.target, phase = o % k.target;
      const int64_t start = block * k.orig - k.width;  // input index of tap 0
      const float* w = k.weights.data() + phase * k.taps;
      const float* x = src + c * length;
      double sum = 0;
      const int64_t i0 = std::max<int64_t>(0, -start), i1 = std::min<int64_t>(k.taps, length - start);
      for (int64_t i = i0; i < i1; ++i) sum += static_cast<double>(w[i]) * x[start + i];
      dst[c * out_length + o] = static_cast<float>(sum);
    }
  }
  return out;
}

}  // namespace orochi::pipeline::reference
