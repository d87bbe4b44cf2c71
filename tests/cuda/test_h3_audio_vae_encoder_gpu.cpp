// The audio VAE encoder on the GPU (f32): each new kernel vs the CPU op on random inputs, the whole
// encode vs the CPU encoder (the tiny golden checkpoint with the release's hop, and the release's
// widths over a short clip), bad input, and a release-size random encode (5 s stereo) that checks
// the output and prints the time.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_audio.h"
#include "backends/cpu/ops_audio_encoder.h"
#include "backends/cpu/ops_llm.h"
#include "backends/cpu/ops_vae.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops_audio.h"
#include "backends/cuda/ops_audio_encoder.h"
#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"
#include "models/h3_audio_vae/encoder.h"
#include "models/h3_audio_vae/parameters.h"
#include "support/paths.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using namespace cuda_test;
using h3_audio::gpu::GpuAudioEncoder;

constexpr double kOpTol = 1e-5;     // one f32 op, summation order aside
constexpr double kModelTol = 1e-4;  // the whole encoder

// [B, C, L] <-> [B, L, C] on the host.
Tensor swap_last_two(const Tensor& x) {
  const int64_t B = x.dim(0), P = x.dim(1), Q = x.dim(2);
  Tensor out = Tensor::empty({B, Q, P}, DType::kF32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q) out.data<float>()[(b * Q + q) * P + p] = x.data<float>()[(b * P + p) * Q + q];
  return out;
}

std::string shape_name(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

// ---- Kernels vs the CPU ops.

class AudioEncoderGpuOps : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto g = cuda::GemmRunner::create(0);
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    gemm_ = std::move(g).value();
  }
  Tensor up(const Tensor& host) {
    auto t = cuda::upload(host, arena(), DType::kF32, stream());
    OROCHI_CHECK(t.has_value(), t.status().to_string());
    return *t;
  }
  Tensor out(const Shape& shape) {
    auto t = arena().tensor(shape, DType::kF32);
    OROCHI_CHECK(t.has_value(), t.status().to_string());
    OROCHI_CHECK(poison(*t, stream()).is_ok(), "poison");
    return *t;
  }
  std::unique_ptr<cuda::GemmRunner> gemm_;
};

TEST_F(AudioEncoderGpuOps, SnakeMatchesCpu) {
  for (const auto& [B, C, L] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {2, 5, 37}, {2, 64, 1000}}) {
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({B, C, L}, 3.0f);
    Tensor alpha = random_f32_values({C}, 0.3f);
    for (int64_t c = 0; c < C; ++c) alpha.data<float>()[c] += 1.0f;
    const Tensor ref = cpu::snake(x, alpha);
    const Tensor y = out({B, L, C});
    ASSERT_STATUS_OK(cuda::audio_snake(up(swap_last_two(x)), up(alpha), y, stream()));
    check_case("audio_snake", shape_name({B, C, L}), swap_last_two(to_host_f32(y, stream())), ref, kOpTol);
    // In place gives the same.
    const Tensor x_dev = up(swap_last_two(x));
    ASSERT_STATUS_OK(cuda::audio_snake(x_dev, up(alpha), x_dev, stream()));
    check_case("audio_snake in place", shape_name({B, C, L}), swap_last_two(to_host_f32(x_dev, stream())), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioEncoderGpuOps, ConvAnyMatchesCpuConv1d) {
  struct Case {
    int64_t B, Cin, Cout, L, K, stride, dilation, padding, scratch_rows;  // scratch_rows 0: the whole im2col
    bool bias;
  };
  for (const Case& c : std::vector<Case>{{2, 1, 8, 50, 7, 1, 1, 3, 0, true},       // conv_in: one input channel
                                         {2, 1, 1, 50, 7, 1, 1, 3, 0, true},       // tiny conv_in: 1 channel in and out
                                         {2, 8, 8, 60, 7, 1, 9, 27, 0, true},      // a residual unit's dilated conv
                                         {2, 8, 8, 60, 1, 1, 1, 0, 0, true},       // its 1x1 conv: one GEMM
                                         {2, 8, 16, 60, 4, 2, 1, 1, 0, true},      // the stride-2 block
                                         {2, 16, 32, 60, 8, 4, 1, 2, 0, true},     // stride 4
                                         {2, 16, 32, 75, 10, 5, 1, 3, 0, true},    // stride 5: kernel 10, padding 3
                                         {1, 32, 64, 30, 3, 1, 1, 1, 0, false},    // conv_out
                                         {2, 8, 16, 100, 7, 1, 3, 9, 7, true},     // im2col in pieces of 7 output steps
                                         {2, 8, 16, 100, 4, 2, 1, 1, 1, true}}) {  // and of one step
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({c.B, c.Cin, c.L});
    const Tensor w = random_f32_values({c.Cout, c.Cin, c.K}, 1.0f / std::sqrt(float(c.Cin * c.K)));
    const Tensor bias = random_f32_values({c.Cout}, 0.5f);
    const Tensor ref =
        cpu::conv1d(x, w, c.bias ? &bias : nullptr, {.stride = c.stride, .padding = c.padding, .dilation = c.dilation});
    const int64_t Lout = ref.dim(2);
    const Tensor dbias = up(bias);
    const Tensor scratch = out({(c.scratch_rows ? c.scratch_rows : c.B * Lout) * c.K * c.Cin});
    const Tensor y = out({c.B, Lout, c.Cout});
    ASSERT_STATUS_OK(cuda::audio_conv1d_any(*gemm_, up(swap_last_two(x)), up(cuda::conv1d_weight_for_gemm(w)),
                                            c.bias ? &dbias : nullptr, c.stride, c.dilation, c.padding, scratch, y,
                                            stream()));
    check_case("audio_conv1d_any",
               shape_name({c.B, c.Cin, c.Cout, c.L, c.K, c.stride, c.dilation, c.padding, c.scratch_rows}),
               swap_last_two(to_host_f32(y, stream())), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioEncoderGpuOps, LayerNormMatchesCpu) {
  for (const auto& [rows, C] : std::vector<std::array<int64_t, 2>>{{1, 7}, {12, 32}, {414, 2048}, {5, 300}}) {
    const size_t mark = arena().mark();
    // A common offset: the statistics must not lose it.
    Tensor x = random_f32_values({rows, C}, 2.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 30.0f;
    Tensor w = random_f32_values({C}, 0.1f), b = random_f32_values({C}, 0.1f);
    for (int64_t i = 0; i < C; ++i) w.data<float>()[i] += 1.0f;
    const Tensor ref = cpu::layer_norm(x, w, b, 1e-5f);
    const Tensor y = out({rows, C});
    ASSERT_STATUS_OK(cuda::audio_layer_norm(up(x), up(w), up(b), 1e-5f, y, stream()));
    check_case("audio_layer_norm", shape_name({rows, C}), to_host_f32(y, stream()), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioEncoderGpuOps, CausalAttentionPoolMatchesCpu) {
  struct Case {
    int64_t B, A, H, D, out_dim;
  };
  for (const Case& c : std::vector<Case>{{2, 6, 2, 16, 8},         // the tiny golden's
                                         {2, 1, 2, 16, 8},         // one step
                                         {1, 9, 3, 10, 4},         // uneven pooling windows
                                         {2, 207, 8, 256, 32}}) {  // the release: 5 s stereo
    const size_t mark = arena().mark();
    const int64_t in = c.H * c.D;
    const Tensor qkv = random_f32_values({c.B, c.A, 3 * in}, 1.5f);
    // The CPU path: per item, split q | k | v, causal attention, mean over heads, adaptive pooling.
    Tensor ref = Tensor::empty({c.B, c.A, c.out_dim}, DType::kF32);
    for (int64_t b = 0; b < c.B; ++b) {
      Tensor q = Tensor::empty({c.A, c.H, c.D}, DType::kF32), k = q.clone(), v = q.clone();
      for (int64_t s = 0; s < c.A; ++s)
        for (int64_t j = 0; j < in; ++j) {
          const float* row = qkv.data<float>() + (b * c.A + s) * 3 * in;
          q.data<float>()[s * in + j] = row[j];
          k.data<float>()[s * in + j] = row[in + j];
          v.data<float>()[s * in + j] = row[2 * in + j];
        }
      const Tensor pooled = cpu::pool_heads(cpu::causal_attention_gqa(q, k, v), c.out_dim);
      std::memcpy(ref.data<float>() + b * c.A * c.out_dim, pooled.data<float>(), pooled.nbytes());
    }
    const Tensor y = out({c.B, c.A, c.out_dim});
    ASSERT_STATUS_OK(cuda::audio_causal_attention_pool(up(qkv), c.H, y, stream()));
    check_case("audio_attention_pool", shape_name({c.B, c.A, c.H, c.D, c.out_dim}), to_host_f32(y, stream()), ref,
               kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioEncoderGpuOps, GeluTanhMulMatchesCpu) {
  const Tensor g = random_f32_values({414, 64}, 3.0f), u = random_f32_values({414, 64});
  const Tensor ref = cpu::gelu_tanh_mul(g, u);
  const Tensor y = out({414, 64});
  ASSERT_STATUS_OK(cuda::audio_gelu_tanh_mul(up(g), up(u), y, stream()));
  check_case("audio_gelu_tanh_mul", "414x64", to_host_f32(y, stream()), ref, kOpTol);
}

// ---- The whole encoder vs the CPU encoder.

std::string data_dir() { return testing::test_data_dir() + "/h3_audio_vae_encoder"; }

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Host encoder weights of `config`'s shapes with scales that keep the trunk's signal bounded:
// weight-normed rows of norm ~0.5 (the residual sums then grow slowly), Snake alphas near 1,
// LayerNorm near identity, linears N(0, 1/fan_in).
h3_audio::AudioEncoderWeights random_host_weights(const h3_audio::AudioVaeConfig& config, uint64_t seed) {
  uint64_t id = 0;
  auto source = [&](const h3_audio::TensorSpec& spec) -> Expected<Tensor> {
    const std::string& n = spec.name;
    float mean = 0.0f, stddev = 1.0f;
    if (ends_with(n, ".weight_g")) {
      mean = 0.5f, stddev = 0.05f;
    } else if (ends_with(n, ".alpha")) {
      mean = 1.0f, stddev = 0.2f;
    } else if (ends_with(n, "bias")) {
      stddev = 0.05f;
    } else if (spec.shape.size() == 1) {  // LayerNorm weights
      mean = 1.0f, stddev = 0.05f;
    } else if (!ends_with(n, ".weight_v")) {
      stddev = 1.0f / std::sqrt(float(shape_numel(spec.shape) / spec.shape[0]));
    }
    Tensor t = testing::random_normal(spec.shape, seed * 100000 + id++, stddev);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += mean;
    return t;
  };
  auto w = h3_audio::assemble_encoder(config, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

std::unique_ptr<GpuAudioEncoder> make_encoder(const h3_audio::AudioEncoderWeights& w, int64_t max_samples,
                                              int64_t max_batch = 2) {
  auto e = GpuAudioEncoder::create(w.config, 0, max_samples, max_batch);
  OROCHI_CHECK(e.has_value(), e.status().to_string());
  const Status s = (*e)->upload(w);
  OROCHI_CHECK(s.is_ok(), s.to_string());
  return std::move(e).value();
}

class AudioGpuEncoder : public GpuTest {
 protected:
  AudioGpuEncoder() : GpuTest(size_t{1} << 20) {}
};

TEST_F(AudioGpuEncoder, TinyGoldenMatchesCpuAndDiffusers) {
  auto w = h3_audio::load_encoder(data_dir() + "/audio_vae");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  auto golden = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value()) << golden.status().to_string();
  const Tensor waveform = golden->get("in.waveform")->to(DType::kF32);  // [2, N], N not a multiple of 800
  const Tensor expected = golden->get("normalized")->to(DType::kF32);   // [2, A, 8]
  auto enc = make_encoder(*w, waveform.dim(1));
  auto got = enc->encode_reference_audio(waveform);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  auto ref = h3_audio::encode_reference_audio(*w, waveform);
  ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
  check_case("audio encode", "tiny golden vs CPU", *got, *ref, kModelTol);
  check_case("audio encode", "tiny golden vs diffusers", *got, expected, kModelTol);
  // The posterior mean alone, and a mono clip (repeated to stereo), shorter than the encoder's maximum.
  auto mean = enc->encode(waveform.slice(0, 1, 2).contiguous());
  auto mean_ref = h3_audio::encode(*w, waveform.slice(0, 1, 2).contiguous());
  ASSERT_TRUE(mean.has_value() && mean_ref.has_value());
  check_case("audio encode", "tiny mean, one item", *mean, *mean_ref, kModelTol);
  const Tensor short_mono =
      waveform.slice(0, 0, 1).contiguous().view({waveform.dim(1)}).slice(0, 0, 1234).contiguous().view({1, 1234});
  auto mono = enc->encode_reference_audio(short_mono);
  auto mono_ref = h3_audio::encode_reference_audio(*w, short_mono);
  ASSERT_TRUE(mono.has_value() && mono_ref.has_value());
  check_case("audio encode", "tiny mono 1234 samples", *mono, *mono_ref, kModelTol);
}

TEST_F(AudioGpuEncoder, ReleaseWidthsMatchCpuOnAShortClip) {
  const h3_audio::AudioVaeConfig c;  // the release: 2048-wide trunk, 8 heads of 256, hop 800
  const auto w = random_host_weights(c, 7);
  auto enc = make_encoder(w, 2000);
  const Tensor x = testing::random_normal({2, 1700}, 11, 0.3f);  // 3 latents per channel
  auto got = enc->encode(x);
  auto ref = h3_audio::encode(w, x);
  ASSERT_TRUE(got.has_value() && ref.has_value());
  check_case("audio encode", "release widths [2, 1700]", *got, *ref, kModelTol);
}

TEST_F(AudioGpuEncoder, RejectsBadInput) {
  auto w = h3_audio::load_encoder(data_dir() + "/audio_vae");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  auto created = GpuAudioEncoder::create(w->config, 0, 4000);
  ASSERT_TRUE(created.has_value()) << created.status().to_string();
  GpuAudioEncoder& enc = **created;
  auto no_weights = enc.encode(testing::random_normal({2, 100}, 1));
  ASSERT_FALSE(no_weights.has_value());
  EXPECT_NE(no_weights.status().message().find("upload"), std::string::npos) << no_weights.status().to_string();
  ASSERT_STATUS_OK(enc.upload(*w));
  auto too_long = enc.encode(testing::random_normal({2, 4001}, 1));
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.status().message().find("max_samples"), std::string::npos) << too_long.status().to_string();
  EXPECT_FALSE(enc.encode(testing::random_normal({3, 100}, 1)).has_value());  // more items than max_batch
  EXPECT_FALSE(enc.encode(Tensor::zeros({2, 0}, DType::kF32)).has_value());   // empty
  EXPECT_FALSE(enc.encode(testing::random_normal({100}, 1)).has_value());     // not [B, N]
  auto three = enc.encode_reference_audio(testing::random_normal({3, 100}, 1));
  ASSERT_FALSE(three.has_value());
  EXPECT_NE(three.status().message().find("3 channels"), std::string::npos) << three.status().to_string();
  EXPECT_TRUE(enc.encode(testing::random_normal({2, 4000}, 1)).has_value());  // the maximum fits
  EXPECT_FALSE(GpuAudioEncoder::create(w->config, 0, 0).has_value());
  EXPECT_FALSE(GpuAudioEncoder::create(w->config, 0, int64_t{800} * 9000).has_value());  // attention too long
  // Weights of another config are refused.
  h3_audio::AudioVaeConfig other = w->config;
  other.encoder_dim = 2;
  EXPECT_FALSE(enc.upload(random_host_weights(other, 1)).is_ok());
}

TEST_F(AudioGpuEncoder, ReleaseSizeRandomEncodeIsFiniteDeterministicAndTimed) {
  const h3_audio::AudioVaeConfig c;
  const int64_t N = 165334;  // 5.167 s at 32 kHz: the soundtrack of a 124-frame reference, 207 latents
  const auto w = random_host_weights(c, 42);
  auto enc = make_encoder(w, N);
  const Tensor x = testing::random_normal({2, N}, 23, 0.2f);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto first = enc->encode(x);
  const auto t1 = Clock::now();
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  auto second = enc->encode(x);
  const auto t2 = Clock::now();
  ASSERT_TRUE(second.has_value()) << second.status().to_string();
  ASSERT_EQ(second->shape(), (Shape{2, 207, 32}));
  double sum_sq = 0;
  for (int64_t i = 0; i < second->numel(); ++i) {
    const float v = second->data<float>()[i];
    ASSERT_TRUE(std::isfinite(v)) << i << ": " << v;
    sum_sq += double(v) * v;
  }
  EXPECT_EQ(std::memcmp(first->raw_data(), second->raw_data(), first->nbytes()), 0);
  const double rms = std::sqrt(sum_sq / double(second->numel()));
  EXPECT_GT(rms, 1e-3) << "the random encoder's output is flat";
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "[audio-gpu] release-size encode [2, %lld] -> [2, 207, 32]: first %.1f ms, warm %.1f ms; "
      "weights %.1f MiB, activations %.1f MiB; output rms %.3f\n",
      static_cast<long long>(N), ms(t1 - t0), ms(t2 - t1), enc->weight_bytes() / 1048576.0,
      enc->activation_bytes_used() / 1048576.0, rms);
  std::fflush(stdout);
}

}  // namespace
}  // namespace orochi
