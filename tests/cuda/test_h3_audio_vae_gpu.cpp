// The audio VAE decoder on the GPU (f32): each new kernel vs the CPU op on random inputs, the whole
// decode vs the CPU decoder (the tiny golden checkpoint, a small config with the release's 7
// stages, and the release's shapes over a few latents), bad input, and a real-size random decode
// (207 latents x 2 channels) that checks the output and prints the time.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops_audio.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops_audio.h"
#include "models/h3_audio_vae/cuda/gpu_audio_decoder.h"
#include "models/h3_audio_vae/decoder.h"
#include "support/paths.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using namespace cuda_test;
using h3_audio::gpu::GpuAudioDecoder;

constexpr double kOpTol = 1e-5;     // one f32 op, summation order aside
constexpr double kModelTol = 1e-4;  // the whole decoder

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

class AudioGpuOps : public GpuTest {
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

TEST_F(AudioGpuOps, AliasFreeSnakeMatchesCpuResampleAndSnake) {
  // Widths below, at and above the 32-channel tile; lengths shorter than the 12-tap window, across
  // tile edges, and long.
  for (const auto& [B, C, L] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {1, 3, 5}, {2, 8, 100}, {2, 40, 257}, {1, 512, 70}, {2, 2, 3000}}) {
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({B, C, L}, 1.5f);  // [B, C, L], the CPU layout
    const Tensor log_alpha = random_f32_values({C}, 0.3f), log_beta = random_f32_values({C}, 0.3f);
    // Arbitrary (asymmetric) taps exercise every index of both filters.
    const Tensor fu = random_f32_values({12}, 0.3f), fd = random_f32_values({12}, 0.3f);
    const Tensor ref = cpu::downsample1d_lowpass(
        cpu::snake_beta(cpu::upsample1d_lowpass(x, fu, 2), log_alpha, log_beta), fd, 2);
    const Tensor y = out({B, L, C});
    ASSERT_STATUS_OK(cuda::audio_alias_free_snake(up(swap_last_two(x)), up(log_alpha), up(log_beta), up(fu), up(fd),
                                                  y, stream()));
    check_case("audio_alias_free_snake", shape_name({B, C, L}), swap_last_two(to_host_f32(y, stream())), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioGpuOps, Conv1dMatchesCpuConv1d) {
  struct Case {
    int64_t B, Cin, Cout, L, K, dilation, padding;
    bool bias;
  };
  for (const Case& c : std::vector<Case>{{2, 8, 16, 50, 3, 1, 1, true},
                                         {1, 16, 8, 40, 7, 3, 9, true},
                                         {2, 32, 32, 300, 11, 5, 25, true},
                                         {2, 5, 3, 17, 1, 1, 0, true},  // K = 1: one GEMM, no im2col
                                         {1, 64, 32, 9, 7, 1, 3, false},
                                         {1, 6, 4, 20, 3, 2, 0, true}}) {  // shrinking (no padding)
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({c.B, c.Cin, c.L});
    const Tensor w = random_f32_values({c.Cout, c.Cin, c.K}, 1.0f / std::sqrt(float(c.Cin * c.K)));
    const Tensor bias = random_f32_values({c.Cout}, 0.5f);
    const Tensor ref = cpu::conv1d(x, w, c.bias ? &bias : nullptr, {.padding = c.padding, .dilation = c.dilation});
    const int64_t Lout = ref.dim(2);
    const Tensor dbias = up(bias);
    const Tensor scratch = out({c.B * Lout * c.K * c.Cin});
    const Tensor y = out({c.B, Lout, c.Cout});
    ASSERT_STATUS_OK(cuda::audio_conv1d(*gemm_, up(swap_last_two(x)), up(cuda::conv1d_weight_for_gemm(w)),
                                        c.bias ? &dbias : nullptr, c.dilation, c.padding, scratch, y, stream()));
    check_case("audio_conv1d", shape_name({c.B, c.Cin, c.Cout, c.L, c.K, c.dilation, c.padding}),
               swap_last_two(to_host_f32(y, stream())), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioGpuOps, ConvTranspose1dMatchesCpu) {
  struct Case {
    int64_t B, Cin, Cout, L, K, stride, padding;
  };
  for (const Case& c : std::vector<Case>{{2, 16, 8, 7, 9, 5, 2},    // the release's first stages
                                         {1, 8, 4, 33, 4, 2, 1},    // and later ones
                                         {2, 6, 3, 1, 4, 2, 1},     // one input step
                                         {1, 4, 5, 10, 3, 2, 0}}) {  // odd kernel, no crop
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({c.B, c.Cin, c.L});
    const Tensor w = random_f32_values({c.Cin, c.Cout, c.K}, 0.5f);
    const Tensor bias = random_f32_values({c.Cout}, 0.5f);
    const Tensor ref = cpu::conv_transpose1d(x, w, &bias, {.stride = c.stride, .padding = c.padding});
    const int64_t Lout = ref.dim(2);
    const Tensor dbias = up(bias);
    const Tensor scratch = out({c.B * c.L * c.K * c.Cout});
    const Tensor y = out({c.B, Lout, c.Cout});
    ASSERT_STATUS_OK(cuda::audio_conv_transpose1d(*gemm_, up(swap_last_two(x)),
                                                  up(cuda::conv_transpose1d_weight_for_gemm(w)), &dbias, c.K,
                                                  c.stride, c.padding, scratch, y, stream()));
    check_case("audio_conv_transpose1d", shape_name({c.B, c.Cin, c.Cout, c.L, c.K, c.stride, c.padding}),
               swap_last_two(to_host_f32(y, stream())), ref, kOpTol);
    arena().reset(mark);
  }
}

TEST_F(AudioGpuOps, MonoConvClampMatchesCpuAndKeepsNan) {
  for (const auto& [B, Cin, L] : std::vector<std::array<int64_t, 3>>{{2, 8, 1000}, {1, 3, 4}}) {
    const size_t mark = arena().mark();
    const Tensor x = random_f32_values({B, Cin, L}, 2.0f);
    const Tensor w = random_f32_values({1, Cin, 7}, 0.5f);
    Tensor ref = cpu::conv1d(x, w, nullptr, {.padding = 3});  // [B, 1, L]
    cpu::clamp_inplace(ref, -1.0f, 1.0f);
    const Tensor y = out({B, L});
    ASSERT_STATUS_OK(cuda::audio_conv1d_mono_clamp(up(swap_last_two(x)), up(w), nullptr, 3, -1.0f, 1.0f, y, stream()));
    const Tensor got = to_host_f32(y, stream());
    check_case("audio_conv1d_mono_clamp", shape_name({B, Cin, L}), got, ref.view({B, L}), kOpTol);
    int64_t clamped = 0;
    for (int64_t i = 0; i < got.numel(); ++i) clamped += std::fabs(got.data<float>()[i]) == 1.0f;
    if (L > 100) {
      EXPECT_GT(clamped, 0) << "the inputs should exercise the clamp";
    }
    arena().reset(mark);
  }
  // A NaN input stays NaN through the clamp (torch.clamp), in the 7 outputs that see it.
  Tensor x = random_f32_values({1, 10, 2}, 1.0f);  // [B, L, C]
  x.data<float>()[5 * 2 + 1] = std::nanf("");
  const Tensor y = out({1, 10});
  ASSERT_STATUS_OK(cuda::audio_conv1d_mono_clamp(up(x), up(random_f32_values({1, 2, 7})), nullptr, 3, -1.0f, 1.0f, y,
                                                 stream()));
  const Tensor got = to_host_f32(y, stream());
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(std::isnan(got.data<float>()[t]), t >= 2 && t <= 8) << t;
}

TEST_F(AudioGpuOps, ResidualSumRoundsAsTheCpuDecoder) {
  const int64_t n = 100003;
  const Tensor a = random_f32_values({n}), b = random_f32_values({n}), acc = random_f32_values({n});
  const Tensor da = up(a), db = up(b), dacc = up(acc);
  const Tensor y = out({n});
  ASSERT_STATUS_OK(cuda::audio_residual_sum(y, Tensor(), da, db, 1.0f, stream()));
  const Tensor plain = to_host_f32(y, stream());
  // In place on the accumulator, with the mean's division.
  ASSERT_STATUS_OK(cuda::audio_residual_sum(dacc, dacc, da, db, 3.0f, stream()));
  const Tensor mean = to_host_f32(dacc, stream());
  for (int64_t i = 0; i < n; ++i) {
    const float h = a.data<float>()[i] + b.data<float>()[i];
    ASSERT_EQ(plain.data<float>()[i], h) << i;
    ASSERT_EQ(mean.data<float>()[i], (acc.data<float>()[i] + h) / 3.0f) << i;
  }
}

// ---- The whole decoder vs the CPU decoder.

std::string data_dir() { return testing::test_data_dir() + "/h3_audio_vae"; }

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Host weights of `config`'s shapes, scaled as the release's so the signal stays O(1): each folded
// convolution row has norm ~g, the AMP blocks' second convolutions smaller, Kaiser filters.
h3_audio::AudioDecoderWeights random_host_weights(const h3_audio::AudioVaeConfig& config, uint64_t seed) {
  uint64_t id = 0;
  const Tensor kaiser = h3_audio::gpu::kaiser_sinc_lowpass_filter();
  auto source = [&](const h3_audio::TensorSpec& spec) -> Expected<Tensor> {
    const std::string& n = spec.name;
    if (ends_with(n, "filter")) return kaiser.view(spec.shape);
    float mean = 0.0f, stddev = 1.0f;
    if (ends_with(n, ".weight_g")) {
      mean = n.find("convs2") != std::string::npos ? 0.3f : 1.0f;
      stddev = 0.1f * mean;
    } else if (ends_with(n, ".alpha") || ends_with(n, ".beta")) {
      stddev = 0.2f;
    } else if (ends_with(n, ".bias")) {
      stddev = 0.05f;
    } else if (n == "dec_in_proj.weight") {
      stddev = 1.0f / std::sqrt(float(spec.shape[1]));
    }
    Tensor t = testing::random_normal(spec.shape, seed * 100000 + id++, stddev);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += mean;
    return t;
  };
  auto w = h3_audio::assemble_decoder(config, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

std::unique_ptr<GpuAudioDecoder> make_decoder(const h3_audio::AudioDecoderWeights& w, int64_t max_latents,
                                              int64_t max_batch = 2) {
  auto d = GpuAudioDecoder::create(w.config, 0, max_latents, max_batch);
  OROCHI_CHECK(d.has_value(), d.status().to_string());
  const Status s = (*d)->upload(w);
  OROCHI_CHECK(s.is_ok(), s.to_string());
  return std::move(d).value();
}

void expect_decode_matches_cpu(GpuAudioDecoder& dec, const h3_audio::AudioDecoderWeights& w, const Tensor& z,
                               const std::string& what) {
  auto got = dec.decode(z);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  auto ref = h3_audio::decode(w, z);
  ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
  check_case("audio decode", what, *got, *ref, kModelTol);
}

class AudioGpuDecoder : public GpuTest {
 protected:
  AudioGpuDecoder() : GpuTest(size_t{1} << 20) {}
};

TEST_F(AudioGpuDecoder, TinyGoldenMatchesCpuAndDiffusers) {
  auto w = h3_audio::load_decoder(data_dir() + "/audio_vae");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  auto golden = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value()) << golden.status().to_string();
  auto denorm = golden->get("denormalized");  // [2, C, A], diffusers' layout
  auto expected = golden->get("out");
  ASSERT_TRUE(denorm.has_value() && expected.has_value());
  const Tensor z = swap_last_two(denorm->to(DType::kF32));  // [2, A, C]
  const int64_t A = z.dim(1);
  auto dec = make_decoder(*w, A);
  expect_decode_matches_cpu(*dec, *w, z, "tiny golden " + shape_to_string(z.shape()));
  auto got = dec->decode(z);
  ASSERT_TRUE(got.has_value());
  const testing::Comparison c = testing::compare(*got, expected->to(DType::kF32).view({2, w->config.hop_length() * A}));
  print_case("audio decode vs diffusers", "tiny golden", c);
  EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= kModelTol) << c.summary();
}

// Host-only: runs without a GPU too.
TEST(AudioGpuWeights, KaiserFilterIsTheCheckpointsFilter) {
  auto w = h3_audio::load_decoder(data_dir() + "/audio_vae");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  EXPECT_TENSOR_CLOSE(h3_audio::gpu::kaiser_sinc_lowpass_filter(), w->act_post.up_filter, 1e-6);
  EXPECT_TENSOR_CLOSE(h3_audio::gpu::kaiser_sinc_lowpass_filter(), w->stages[1].blocks[0].acts[3].down_filter, 1e-6);
}

// The release's 7 stages (rates 5,5,2,2,2,2,2, kernels 9,9,4,...) and AMP blocks with few channels.
h3_audio::AudioVaeConfig seven_stage_config() {
  h3_audio::AudioVaeConfig c;  // release defaults
  c.latent_dim = 64;
  c.decoder_dim = 256;  // 128 channels after the first stage, 2 after the last
  return c;
}

TEST_F(AudioGpuDecoder, SevenStagesMatchCpuAndAreDeterministic) {
  const auto w = random_host_weights(seven_stage_config(), 5);
  auto dec = make_decoder(w, 4);
  const Tensor z = testing::random_normal({2, 4, 32}, 17);
  expect_decode_matches_cpu(*dec, w, z, "7 stages [2, 4, 32]");
  // Smaller decodes fit the same buffers: one channel, fewer latents.
  expect_decode_matches_cpu(*dec, w, testing::random_normal({1, 3, 32}, 18), "7 stages [1, 3, 32]");
  auto a = dec->decode(z), b = dec->decode(z);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0) << "decode is not deterministic";
}

TEST_F(AudioGpuDecoder, ReleaseShapesMatchCpuOnFewLatents) {
  // Every layer at the release's width (1024 -> 8 channels), over 2 latents (1,600 samples).
  const auto w = random_host_weights(h3_audio::AudioVaeConfig{}, 9);
  auto dec = make_decoder(w, 2, 1);
  expect_decode_matches_cpu(*dec, w, testing::random_normal({1, 2, 32}, 19), "release [1, 2, 32]");
}

TEST_F(AudioGpuDecoder, RejectsBadInput) {
  const h3_audio::AudioVaeConfig c = seven_stage_config();
  auto created = GpuAudioDecoder::create(c, 0, 4);
  ASSERT_TRUE(created.has_value()) << created.status().to_string();
  GpuAudioDecoder& dec = **created;
  auto no_weights = dec.decode(testing::random_normal({2, 4, 32}, 1));
  ASSERT_FALSE(no_weights.has_value());
  EXPECT_NE(no_weights.status().message().find("upload"), std::string::npos) << no_weights.status().to_string();
  ASSERT_STATUS_OK(dec.init_random(3));
  EXPECT_FALSE(dec.decode(testing::random_normal({2, 4, 16}, 1)).has_value());  // wrong latent width
  EXPECT_FALSE(dec.decode(testing::random_normal({4, 32}, 1)).has_value());     // not [B, A, C]
  auto too_long = dec.decode(testing::random_normal({2, 5, 32}, 1));            // 10 rows > 8
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.status().message().find("max_latents"), std::string::npos) << too_long.status().to_string();
  EXPECT_TRUE(dec.decode(testing::random_normal({1, 8, 32}, 1)).has_value());  // 8 rows fit
  EXPECT_FALSE(GpuAudioDecoder::create(c, 0, 0).has_value());
  h3_audio::AudioVaeConfig bad = c;
  bad.decoder_rates = {5, 5};
  EXPECT_FALSE(GpuAudioDecoder::create(bad, 0, 4).has_value());
  // Weights of another config are refused.
  h3_audio::AudioVaeConfig other = c;
  other.resblock_dilation_sizes = {{1, 3}, {1, 3, 5}, {1, 3, 5}};
  EXPECT_FALSE(dec.upload(random_host_weights(other, 1)).is_ok());
}

TEST_F(AudioGpuDecoder, ReleaseSizeRandomDecodeIsFiniteAndTimed) {
  const h3_audio::AudioVaeConfig c;  // the release: 151 M parameters, 1024 -> 8 channels, hop 800
  const int64_t A = 207;
  auto created = GpuAudioDecoder::create(c, 0, A);
  ASSERT_TRUE(created.has_value()) << created.status().to_string();
  GpuAudioDecoder& dec = **created;
  ASSERT_STATUS_OK(dec.init_random(42));
  const Tensor z = testing::random_normal({2, A, 32}, 23);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto first = dec.decode(z);
  const auto t1 = Clock::now();
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  auto second = dec.decode(z);
  const auto t2 = Clock::now();
  ASSERT_TRUE(second.has_value()) << second.status().to_string();
  ASSERT_EQ(second->shape(), (Shape{2, 800 * A}));
  double sum = 0, sum_sq = 0;
  int64_t clamped = 0;
  for (int64_t i = 0; i < second->numel(); ++i) {
    const float v = second->data<float>()[i];
    ASSERT_TRUE(std::isfinite(v) && v >= -1.0f && v <= 1.0f) << i << ": " << v;
    sum += v;
    sum_sq += double(v) * v;
    clamped += std::fabs(v) == 1.0f;
  }
  const double n = double(second->numel()), stddev = std::sqrt(std::max(0.0, sum_sq / n - (sum / n) * (sum / n)));
  EXPECT_EQ(std::memcmp(first->raw_data(), second->raw_data(), first->nbytes()), 0);
  EXPECT_GT(stddev, 1e-3) << "the random decoder's output is flat";
  EXPECT_LT(clamped, second->numel() / 2) << "most of the random decoder's output is clamped";
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("[audio-gpu] release-size decode [2, %lld, 32] -> [2, %lld]: first %.1f ms, warm %.1f ms; "
              "weights %.1f MiB, activations %.1f MiB; output std %.3f, clamped %.2f%%\n",
              static_cast<long long>(A), static_cast<long long>(800 * A), ms(t1 - t0), ms(t2 - t1),
              dec.weight_bytes() / 1048576.0, dec.activation_bytes_used() / 1048576.0, stddev, 100.0 * clamped / n);
  std::fflush(stdout);
}

}  // namespace
}  // namespace orochi
