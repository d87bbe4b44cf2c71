#include "models/h3_audio_vae/cuda/gpu_audio_weights.h"

#include <cmath>
#include <numbers>

#include "backends/cuda/ops_audio.h"
#include "backends/cuda/random_fill.h"
#include "models/h3_audio_vae/parameters.h"

namespace orochi::h3_audio::gpu {
namespace {

size_t aligned(size_t bytes) {
  const size_t a = cuda::DeviceArena::kAlignment;
  return (bytes + a - 1) / a * a;
}

class Allocator {
 public:
  explicit Allocator(cuda::DeviceArena& arena) : arena_(arena) {}
  Tensor take(const Shape& shape) {
    if (!status_.is_ok()) return {};
    Expected<Tensor> t = arena_.tensor(shape, DType::kF32);
    if (!t) {
      status_ = t.status();
      return {};
    }
    return std::move(t).value();
  }
  GpuConv conv(int64_t cout, int64_t cin, int64_t k, bool bias) {
    GpuConv c;
    c.weight = take({cout, k * cin});
    if (bias) c.bias = take({cout});
    return c;
  }
  GpuSnake snake(int64_t channels) {
    return {take({channels}), take({channels}), take({kAliasFreeTaps}), take({kAliasFreeTaps})};
  }
  const Status& status() const { return status_; }

 private:
  cuda::DeviceArena& arena_;
  Status status_;
};

Status upload_conv(const ConvWeights& host, const GpuConv& device, bool transposed, cudaStream_t stream) {
  const Tensor w = transposed ? cuda::conv_transpose1d_weight_for_gemm(host.weight)
                              : cuda::conv1d_weight_for_gemm(host.weight);
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(w, device.weight, stream));
  if (device.bias.defined() != host.bias.defined())
    return invalid_argument("audio decoder weights: a convolution's bias is " +
                            std::string(host.bias.defined() ? "present" : "missing") +
                            " in the host weights but not on the device; rebuild the decoder for this config");
  if (host.bias.defined()) OROCHI_RETURN_IF_ERROR(cuda::upload_into(host.bias, device.bias, stream));
  return Status::ok();
}

Status upload_snake(const AliasFreeSnakeWeights& host, const GpuSnake& device, cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(host.log_alpha, device.log_alpha, stream));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(host.log_beta, device.log_beta, stream));
  OROCHI_RETURN_IF_ERROR(cuda::upload_into(host.up_filter.view({kAliasFreeTaps}), device.up_filter, stream));
  return cuda::upload_into(host.down_filter.view({kAliasFreeTaps}), device.down_filter, stream);
}

// Fills tensors with N(mean, std²), each from its own Philox stream.
class RandomFiller {
 public:
  RandomFiller(uint64_t seed, cudaStream_t stream) : seed_(seed), stream_(stream) {}
  Status normal(const Tensor& t, float mean, float stddev) {
    return cuda::fill_normal(t, seed_, next_stream_++, mean, stddev, stream_);
  }
  Status conv(const GpuConv& c, float fan_in, float gain = 1.0f) {
    OROCHI_RETURN_IF_ERROR(normal(c.weight, 0.0f, gain / std::sqrt(fan_in)));
    return c.bias.defined() ? normal(c.bias, 0.0f, 0.01f) : Status::ok();
  }
  Status snake(const GpuSnake& s, const Tensor& host_filter) {
    OROCHI_RETURN_IF_ERROR(normal(s.log_alpha, 0.0f, 0.1f));
    OROCHI_RETURN_IF_ERROR(normal(s.log_beta, 0.0f, 0.1f));
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(host_filter, s.up_filter, stream_));
    return cuda::upload_into(host_filter, s.down_filter, stream_);
  }

 private:
  uint64_t seed_, next_stream_ = 1;
  cudaStream_t stream_;
};

}  // namespace

size_t weight_arena_bytes(const AudioVaeConfig& config) {
  size_t bytes = 0;
  for (const TensorSpec& spec : decoder_tensors(config)) {
    const std::string& n = spec.name;
    // A weight_g / weight_v pair becomes one folded tensor of v's size.
    if (n.size() >= 9 && n.compare(n.size() - 9, 9, ".weight_g") == 0) continue;
    bytes += aligned(static_cast<size_t>(shape_numel(spec.shape)) * sizeof(float));
  }
  return bytes + cuda::DeviceArena::kAlignment;
}

Expected<GpuAudioDecoderWeights> allocate_weights(const AudioVaeConfig& c, cuda::DeviceArena& arena) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  Allocator a(arena);
  GpuAudioDecoderWeights w;
  w.dec_in_proj = a.conv(c.latent_dim, c.latent_channels, 1, true);
  w.conv_pre = a.conv(c.decoder_dim, c.latent_dim, 7, true);
  for (int64_t i = 0; i < c.num_stages(); ++i) {
    GpuStage s;
    s.rate = c.decoder_rates[i];
    s.kernel = c.decoder_kernel_sizes[i];
    const int64_t cin = c.decoder_dim >> i, ch = c.stage_channels(i);
    s.up.weight = a.take({s.kernel * ch, cin});
    s.up.bias = a.take({ch});
    for (size_t j = 0; j < c.resblock_kernel_sizes.size(); ++j) {
      GpuAmpBlock b;
      b.kernel = c.resblock_kernel_sizes[j];
      b.dilations = c.resblock_dilation_sizes[j];
      for (size_t d = 0; d < b.dilations.size(); ++d) {
        b.convs1.push_back(a.conv(ch, ch, b.kernel, true));
        b.convs2.push_back(a.conv(ch, ch, b.kernel, true));
        b.acts.push_back(a.snake(ch));
        b.acts.push_back(a.snake(ch));
      }
      s.blocks.push_back(std::move(b));
    }
    w.stages.push_back(std::move(s));
  }
  const int64_t last = c.stage_channels(c.num_stages() - 1);
  w.act_post = a.snake(last);
  w.conv_post = a.take({1, last, 7});
  OROCHI_RETURN_IF_ERROR(a.status().with_context("allocating the audio decoder's GPU weights"));
  return w;
}

Status upload_weights(const AudioDecoderWeights& host, const GpuAudioDecoderWeights& device, cudaStream_t stream) {
  if (host.stages.size() != device.stages.size())
    return invalid_argument("audio decoder weights have " + std::to_string(host.stages.size()) +
                            " stages, the GPU decoder was built for " + std::to_string(device.stages.size()));
  OROCHI_RETURN_IF_ERROR(upload_conv(host.dec_in_proj, device.dec_in_proj, false, stream));
  OROCHI_RETURN_IF_ERROR(upload_conv(host.conv_pre, device.conv_pre, false, stream));
  for (size_t i = 0; i < host.stages.size(); ++i) {
    const UpsampleStageWeights& hs = host.stages[i];
    const GpuStage& ds = device.stages[i];
    if (hs.blocks.size() != ds.blocks.size() || hs.rate != ds.rate || hs.kernel != ds.kernel)
      return invalid_argument("audio decoder stage " + std::to_string(i) +
                              " does not match the GPU decoder's config; build it from the weights' config");
    OROCHI_RETURN_IF_ERROR(upload_conv(hs.up, ds.up, true, stream));
    for (size_t j = 0; j < hs.blocks.size(); ++j) {
      const AmpBlockWeights& hb = hs.blocks[j];
      const GpuAmpBlock& db = ds.blocks[j];
      if (hb.dilations != db.dilations || hb.kernel != db.kernel)
        return invalid_argument("audio decoder AMP block " + std::to_string(j) + " of stage " + std::to_string(i) +
                                " does not match the GPU decoder's config");
      for (size_t d = 0; d < hb.dilations.size(); ++d) {
        OROCHI_RETURN_IF_ERROR(upload_conv(hb.convs1[d], db.convs1[d], false, stream));
        OROCHI_RETURN_IF_ERROR(upload_conv(hb.convs2[d], db.convs2[d], false, stream));
      }
      for (size_t k = 0; k < hb.acts.size(); ++k) OROCHI_RETURN_IF_ERROR(upload_snake(hb.acts[k], db.acts[k], stream));
    }
  }
  OROCHI_RETURN_IF_ERROR(upload_snake(host.act_post, device.act_post, stream));
  return cuda::upload_into(host.conv_post.weight, device.conv_post, stream);
}

Status fill_random_weights(const AudioVaeConfig& c, const GpuAudioDecoderWeights& w, uint64_t seed,
                           cudaStream_t stream) {
  RandomFiller f(seed, stream);
  const Tensor filter = kaiser_sinc_lowpass_filter();
  OROCHI_RETURN_IF_ERROR(f.conv(w.dec_in_proj, static_cast<float>(c.latent_channels)));
  OROCHI_RETURN_IF_ERROR(f.conv(w.conv_pre, static_cast<float>(c.latent_dim * 7)));
  for (size_t i = 0; i < w.stages.size(); ++i) {
    const GpuStage& s = w.stages[i];
    const int64_t cin = c.decoder_dim >> i, ch = c.stage_channels(static_cast<int64_t>(i));
    // Each transposed-conv output sums about K/rate taps of every input channel.
    OROCHI_RETURN_IF_ERROR(f.conv(s.up, static_cast<float>(cin * s.kernel) / static_cast<float>(s.rate)));
    for (const GpuAmpBlock& b : s.blocks) {
      const float fan_in = static_cast<float>(ch * b.kernel);
      for (size_t d = 0; d < b.dilations.size(); ++d) {
        OROCHI_RETURN_IF_ERROR(f.conv(b.convs1[d], fan_in));
        OROCHI_RETURN_IF_ERROR(f.conv(b.convs2[d], fan_in, 0.3f));
      }
      for (const GpuSnake& a : b.acts) OROCHI_RETURN_IF_ERROR(f.snake(a, filter));
    }
  }
  OROCHI_RETURN_IF_ERROR(f.snake(w.act_post, filter));
  // A tenth of unit gain: the signal grows through the 7 stages, and a unit-gain last conv left two
  // thirds of the random decoder's samples clamped at +-1 on the H200 (first device run).
  return f.normal(w.conv_post, 0.0f, 0.1f / std::sqrt(static_cast<float>(w.conv_post.dim(1) * w.conv_post.dim(2))));
}

Tensor kaiser_sinc_lowpass_filter() {
  constexpr int64_t taps = kAliasFreeTaps, half = taps / 2;
  constexpr double cutoff = 0.5 / kAliasFreeRatio, half_width = 0.6 / kAliasFreeRatio;
  const double pi = std::numbers::pi;
  // Kaiser's formula for the window's beta from the attenuation A (dB) of the transition band.
  const double attenuation = 2.285 * (half - 1) * pi * (4 * half_width) + 7.95;
  const double beta = attenuation > 50.0   ? 0.1102 * (attenuation - 8.7)
                      : attenuation >= 21.0 ? 0.5842 * std::pow(attenuation - 21.0, 0.4) + 0.07886 * (attenuation - 21.0)
                                            : 0.0;
  std::vector<double> f(taps);
  double sum = 0.0;
  for (int64_t n = 0; n < taps; ++n) {
    const double r = 2.0 * n / (taps - 1) - 1.0;  // symmetric (non-periodic) window over [-1, 1]
    const double window = std::cyl_bessel_i(0.0, beta * std::sqrt(1.0 - r * r)) / std::cyl_bessel_i(0.0, beta);
    const double time = static_cast<double>(n - half) + 0.5;  // even taps: centred between samples
    const double arg = 2.0 * cutoff * time;
    const double sinc = arg == 0.0 ? 1.0 : std::sin(pi * arg) / (pi * arg);
    f[n] = 2.0 * cutoff * window * sinc;
    sum += f[n];
  }
  Tensor out = Tensor::empty({taps}, DType::kF32);
  for (int64_t n = 0; n < taps; ++n) out.data<float>()[n] = static_cast<float>(f[n] / sum);
  return out;
}

}  // namespace orochi::h3_audio::gpu
