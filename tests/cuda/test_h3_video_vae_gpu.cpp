// The video VAE decoder on the GPU (fp16 autocast: f16 linears and attention, f32 stream and norms):
// each new kernel vs the CPU op on random inputs, the f16 GEMM and attention vs the CPU ops, one
// tile and a two-chunk, 2x2-tile decode vs the CPU decoder (fp32) on random weights with the real
// head_dim 64, determinism, bad input, and one real-size tile on random weights.
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_vae.h"
#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops_vae.h"
#include "dist/cuda/gpu_parallel_context.h"
#include "models/h3_video_vae/cuda/gpu_decoder.h"
#include "models/h3_video_vae/parameters.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;
using h3vae::gpu::GpuVideoDecoder;

constexpr float kEps = 1e-5f;
constexpr double kF16Tol = 2e-3;    // one op with f16 inputs/outputs
constexpr double kModelTol = 1e-2;  // the whole decoder, f16 autocast vs fp32

Tensor f16_rounded(const Tensor& f32) {
  Tensor t = f32.clone();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f16_to_f32(f32_to_f16(t.data<float>()[i]));
  return t;
}
Tensor random_f16_values(const Shape& shape, float stddev = 1.0f, float mean = 0.0f) {
  Tensor t = random_f32_values(shape, stddev);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += mean;
  return f16_rounded(t);
}
bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// ---- Kernels vs the CPU ops.

class VaeGpuOps : public GpuTest {};

TEST_F(VaeGpuOps, RmsNormAndLayerNormToF16) {
  for (const Shape& shape : {Shape{1, 8}, Shape{5, 128}, Shape{37, 2048}, Shape{3, 100}}) {
    const size_t mark = arena().mark();
    const int64_t C = shape[1];
    Tensor x = random_f32_values(shape, 3.0f), w = random_f32_values({C}, 0.3f), b = random_f32_values({C}, 0.5f);
    for (int64_t i = 0; i < C; ++i) w.data<float>()[i] += 1.0f;
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor(shape, DType::kF16));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(cuda::vae_rms_norm(dx, dw, kEps, dy, stream()));
    const Tensor rms = cpu::rms_norm(x, w, kEps), rms_emulated = f16_rounded(rms);
    check_case("vae_rms_norm", shape_to_string(shape), to_host_f32(dy, stream()), rms, kF16Tol, &rms_emulated, 0.99);
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(cuda::vae_layer_norm(dx, dw, db, kEps, dy, stream()));
    const Tensor ln = cpu::layer_norm(x, w, b, kEps), ln_emulated = f16_rounded(ln);
    check_case("vae_layer_norm", shape_to_string(shape), to_host_f32(dy, stream()), ln, kF16Tol, &ln_emulated, 0.99);
    arena().reset(mark);
  }
}

// The release's heads (64 channels, RoPE on 48) with the decoder's own RoPE table.
TEST_F(VaeGpuOps, QkNormRopeMatchesCpuNormAndRope) {
  h3vae::VideoVaeConfig c;  // release: head_dim 64, rope_dim 48
  for (const auto& [T, H, W, heads] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 2}, {7, 4, 6, 2}, {7, 16, 16, 4}}) {
    const size_t mark = arena().mark();
    const cpu::RopeTable table = h3vae::tile_rope_table(c, T, H, W, 5);
    const int64_t S = table.cos.dim(0), D = c.decoder_attention_head_dim;
    const Tensor cos = f16_rounded(table.cos), sin = f16_rounded(table.sin);  // as the reference's .to(f16)
    Tensor x = random_f16_values({S, heads, D}, 2.0f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dcos, cuda::upload(cos, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dsin, cuda::upload(sin, arena(), DType::kF16, stream()));
    ASSERT_STATUS_OK(cuda::vae_qk_norm_rope(dx, kEps, dcos, dsin, stream()));
    Tensor ref = cpu::rms_norm(x, Tensor::from_floats(std::vector<float>(D, 1.0f), {D}), kEps);
    cpu::apply_rope(ref, cpu::RopeTable{cos, sin});
    check_case("vae_qk_norm_rope", shape_to_string({S, heads, D}), to_host_f32(dx, stream()), ref, kF16Tol);
    arena().reset(mark);
  }
}

TEST_F(VaeGpuOps, SwigluAddScaledTokensCast) {
  const int64_t M = 37, I = 96, D = 64, N = 30, R = 4;
  Tensor u = random_f16_values({M, 2 * I}, 2.0f);
  ASSERT_OK_AND_ASSIGN(Tensor du, cuda::upload(u, arena(), DType::kF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dg, arena().tensor({M, I}, DType::kF16));
  ASSERT_STATUS_OK(poison(dg, stream()));
  ASSERT_STATUS_OK(cuda::vae_swiglu(du, dg, stream()));
  check_case("vae_swiglu", "[37, 192]", to_host_f32(dg, stream()), cpu::swiglu(u), kF16Tol);

  // h += f32(y) · scale is exact f32 arithmetic: bit-equal to the CPU op.
  Tensor h = random_f32_values({M, D}, 1.0f), y = random_f16_values({M, D}), scale = random_f32_values({D}, 0.1f);
  ASSERT_OK_AND_ASSIGN(Tensor dh, cuda::upload(h, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(y, arena(), DType::kF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor ds, cuda::upload(scale, arena(), DType::kF32, stream()));
  ASSERT_STATUS_OK(cuda::vae_add_scaled(dh, dy, ds, stream()));
  cpu::add_scaled_inplace(h, y, scale);
  const Tensor got_h = to_host_f32(dh, stream());
  check_case("vae_add_scaled", "[37, 64]", got_h, h, 1e-7, &h, 1.0);

  // Tokens: patches, registers (f16) and one zero row, exactly.
  Tensor patches = random_f16_values({N, D}), registers = random_f16_values({R, D});
  ASSERT_OK_AND_ASSIGN(Tensor dp, cuda::upload(patches, arena(), DType::kF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dr, cuda::upload(registers, arena(), DType::kF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dt, arena().tensor({N + R + 1, D}, DType::kF32));
  ASSERT_STATUS_OK(poison(dt, stream()));
  ASSERT_STATUS_OK(cuda::vae_tokens(dp, dr, dt, stream()));
  Tensor tokens = Tensor::zeros({N + R + 1, D}, DType::kF32);
  std::memcpy(tokens.data<float>(), patches.data<float>(), N * D * sizeof(float));
  std::memcpy(tokens.data<float>() + N * D, registers.data<float>(), R * D * sizeof(float));
  EXPECT_TRUE(bit_equal(to_host_f32(dt, stream()), tokens));

  // Cast: nearest even, as the host conversion.
  Tensor x = random_f32_values({1001}, 100.0f);
  ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dx16, arena().tensor({1001}, DType::kF16));
  ASSERT_STATUS_OK(cuda::cast_to_f16(dx, dx16, stream()));
  EXPECT_TRUE(bit_equal(to_host_f32(dx16, stream()), f16_rounded(x)));
}

// Unpatchify vs a naive loop over the output pixels.
TEST_F(VaeGpuOps, UnpatchifyPlacesEveryValue) {
  const int64_t T = 3, H = 2, W = 5, ch = 3, pt = 4, p = 4, P = ch * pt * p * p;
  Tensor patches = random_f16_values({T * H * W, P});
  ASSERT_OK_AND_ASSIGN(Tensor dp, cuda::upload(patches, arena(), DType::kF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dout, arena().tensor({ch, T * pt, H * p, W * p}, DType::kF32));
  ASSERT_STATUS_OK(poison(dout, stream()));
  ASSERT_STATUS_OK(cuda::vae_unpatchify(dp, T, H, W, pt, p, dout, stream()));
  Tensor ref = Tensor::empty({ch, T * pt, H * p, W * p}, DType::kF32);
  for (int64_t c = 0; c < ch; ++c)
    for (int64_t f = 0; f < T * pt; ++f)
      for (int64_t y = 0; y < H * p; ++y)
        for (int64_t x = 0; x < W * p; ++x) {
          const int64_t token = ((f / pt) * H + y / p) * W + x / p;
          const int64_t value = ((c * pt + f % pt) * p + y % p) * p + x % p;
          ref.data<float>()[((c * T * pt + f) * H * p + y) * W * p + x] = patches.data<float>()[token * P + value];
        }
  EXPECT_TRUE(bit_equal(to_host_f32(dout, stream()), ref));
}

TEST_F(VaeGpuOps, F16GemmMatchesCpuLinear) {
  auto runner = cuda::GemmRunner::create(0);
  ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
  for (const auto& [M, K, N] : std::vector<std::array<int64_t, 3>>{{37, 64, 96}, {113, 24, 2048}, {300, 128, 512},
                                                                   {1797, 2048, 192}, {5, 8, 8}}) {
    const size_t mark = arena().mark();
    Tensor x = random_f16_values({M, K}), w = random_f16_values({N, K}, 1.0f / std::sqrt(float(K)));
    Tensor b = random_f16_values({N}, 0.1f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kF16));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK((*runner)->linear(dx, dw, &db, dy, stream()));
    check_case("linear(f16)", shape_to_string({M, K, N}), to_host_f32(dy, stream()), cpu::linear(x, w, &b), kF16Tol);
    arena().reset(mark);
  }
}

TEST_F(VaeGpuOps, F16AttentionMatchesCpu) {
  cuda::CudnnAttention attention(stream());
  for (const auto& [S, heads] : std::vector<std::array<int64_t, 2>>{{31, 2}, {300, 2}, {1797, 4}}) {
    const size_t mark = arena().mark();
    const int64_t D = 64;
    const Tensor q = random_f16_values({S, heads, D}), k = random_f16_values({S, heads, D});
    const Tensor v = random_f16_values({S, heads, D});
    ASSERT_OK_AND_ASSIGN(Tensor dq, cuda::upload(q, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dk, cuda::upload(k, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dv, cuda::upload(v, arena(), DType::kF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dout, arena().tensor({S, heads, D}, DType::kF16));
    ASSERT_STATUS_OK(poison(dout, stream()));
    const cuda::AttentionShape shape{S, S, heads, D, DType::kF16};
    ASSERT_STATUS_OK(attention.run(dq.raw_data(), dk.raw_data(), dv.raw_data(), dout.raw_data(), shape, stream()));
    std::printf("f16 attention %s: %s\n", shape.to_string().c_str(), attention.describe(shape).c_str());
    check_case("attention(f16)", shape.to_string(), to_host_f32(dout, stream()), cpu::attention(q, k, v), kF16Tol);
    arena().reset(mark);
  }
  // bf16 and f16 graphs of one shape are distinct cache entries.
  EXPECT_EQ(attention.describe(cuda::AttentionShape{31, 31, 2, 64}), "not built");
}

// ---- The decoder vs the CPU decoder.

// Release-like heads (64 channels, RoPE 48) at a small width: 2 heads, 2 layers, 8 latent channels,
// a spatial ratio of 4 so tiles stay small.
h3vae::VideoVaeConfig small_config() {
  h3vae::VideoVaeConfig c;
  c.latent_channels = 8;
  c.spatial_ratio = 4;
  c.decoder_num_layers = 2;
  c.decoder_num_attention_heads = 2;
  c.decoder_num_register_tokens = 2;
  c.decoder_ffn_mult = 2;
  c.latents_mean = std::vector<float>(8, 0.0f);
  c.latents_std = std::vector<float>(8, 1.0f);
  return c;
}

// f16-representable random host weights, scaled as init_random scales them.
h3vae::DecoderWeights random_host_weights(const h3vae::VideoVaeConfig& c, uint64_t seed) {
  uint64_t stream_id = 0;
  auto source = [&](const h3vae::ParamSpec& spec) -> Expected<Tensor> {
    const std::string& n = spec.name;
    auto ends = [&](const char* s) {
      return n.size() >= std::strlen(s) && n.compare(n.size() - std::strlen(s), std::string::npos, s) == 0;
    };
    float mean = 0.0f, stddev = 0.02f;
    if (spec.shape.size() >= 2 && ends(".weight")) stddev = 0.8f / std::sqrt(float(spec.shape[1]));
    else if (ends("register_tokens")) stddev = 1.0f;
    else if (ends("scale1") || ends("scale2")) mean = 0.3f, stddev = 0.05f;
    else if (ends(".weight")) mean = 1.0f, stddev = 0.1f;
    Tensor t = testing::random_normal(spec.shape, seed * 1000 + stream_id++, stddev);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f16_to_f32(f32_to_f16(t.data<float>()[i] + mean));
    return t;
  };
  auto w = h3vae::assemble_decoder_weights(c, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

std::unique_ptr<GpuVideoDecoder> make_decoder(const h3vae::DecoderWeights& w, int64_t max_tokens) {
  auto d = GpuVideoDecoder::create(w.config, 0, max_tokens);
  OROCHI_CHECK(d.has_value(), d.status().to_string());
  const Status s = (*d)->upload(w);
  OROCHI_CHECK(s.is_ok(), s.to_string());
  return std::move(d).value();
}

class VaeGpuDecoder : public GpuTest {
 protected:
  VaeGpuDecoder() : GpuTest(size_t{1} << 20) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    weights_ = random_host_weights(small_config(), 3);
    options_.tile_height = options_.tile_width = 16;  // 4 latents
    options_.min_overlap_height = options_.min_overlap_width = 8;
  }
  h3vae::DecoderWeights weights_;
  h3vae::DecodeOptions options_;
};

TEST_F(VaeGpuDecoder, OneTileMatchesCpuDecodeTile) {
  const Tensor z = testing::random_normal({8, 7, 4, 6}, 11);
  auto dec = make_decoder(weights_, 7 * 4 * 6);
  ASSERT_OK_AND_ASSIGN(Tensor got, dec->decode_tile(z));
  const Tensor ref = h3vae::decode_tile(weights_, z);
  ASSERT_EQ(got.shape(), (Shape{3, 28, 16, 24}));
  const testing::Comparison c = testing::compare(got, ref);
  print_case("vae decode_tile", "[8, 7, 4, 6]", c);
  EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= kModelTol) << c.summary();
  // A strided view of the same latents decodes to the same bits.
  const Tensor wide = testing::random_normal({8, 7, 4, 9}, 12);
  std::vector<float> copy(wide.data<float>(), wide.data<float>() + wide.numel());
  for (int64_t ch = 0; ch < 8; ++ch)
    for (int64_t i = 0; i < 7 * 4; ++i)
      for (int64_t x = 0; x < 6; ++x) copy[(ch * 28 + i) * 9 + x] = z.data<float>()[(ch * 28 + i) * 6 + x];
  ASSERT_OK_AND_ASSIGN(Tensor from_view, dec->decode_tile(Tensor::from_floats(copy, {8, 7, 4, 9}).slice(3, 0, 6)));
  EXPECT_TRUE(bit_equal(from_view, got));
}

TEST_F(VaeGpuDecoder, TwoChunksTwoByTwoTilesMatchCpuDecodeAndRepeatBitExactly) {
  const Tensor z = testing::random_normal({8, 12, 6, 6}, 21);  // 12 = 5·2 + 2: two chunks; 24 px: 2 tiles per axis
  ASSERT_OK_AND_ASSIGN(const int64_t tokens, h3vae::gpu::max_tile_tokens(weights_.config, options_, 6, 6));
  EXPECT_EQ(tokens, 7 * 4 * 4);
  ASSERT_EQ(h3vae::plan_tiles(weights_.config, 6, 6, options_).count(), 4);
  auto dec = make_decoder(weights_, tokens);
  std::vector<std::pair<int64_t, int64_t>> progress;
  ASSERT_OK_AND_ASSIGN(Tensor got, dec->decode(z, options_, [&](int64_t d, int64_t n) { progress.push_back({d, n}); }));
  EXPECT_EQ(progress, (std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {2, 2}}));
  Expected<Tensor> ref = h3vae::decode(weights_, z, options_);
  ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
  ASSERT_EQ(got.shape(), (Shape{3, 39, 24, 24}));
  const testing::Comparison c = testing::compare(got, *ref);
  print_case("vae decode (2 chunks, 2x2)", "[8, 12, 6, 6]", c);
  EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= kModelTol) << c.summary();

  // Determinism: again on this decoder, and on a fresh one (what another GPU would compute).
  ASSERT_OK_AND_ASSIGN(Tensor again, dec->decode(z, options_));
  EXPECT_TRUE(bit_equal(again, got));
  auto other = make_decoder(weights_, tokens);
  ASSERT_OK_AND_ASSIGN(Tensor fresh, other->decode(z, options_));
  EXPECT_TRUE(bit_equal(fresh, got));
  // Chunks decoded separately and assembled on the host give the same video (the multi-GPU split).
  std::vector<Tensor> clips;
  for (int64_t i = 1; i >= 0; --i) {
    ASSERT_OK_AND_ASSIGN(Tensor clip, other->decode_chunk(z, i, options_));
    clips.insert(clips.begin(), clip);
  }
  Expected<Tensor> assembled = h3vae::assemble_chunks(weights_.config, clips, options_.blend_precision);
  ASSERT_TRUE(assembled.has_value());
  EXPECT_TRUE(bit_equal(*assembled, got));
}

// decode() stitches tiles and cross-fades chunks on the device; with the reference's f16 blends
// (what `orochi generate` uses) and a 4 x 2 tile grid with uneven overlaps it must still equal the host
// stitching of the same GPU tiles bit for bit.
TEST_F(VaeGpuDecoder, DeviceStitchingEqualsHostStitchingInF16) {
  h3vae::DecodeOptions options = options_;
  options.blend_precision = h3vae::BlendPrecision::kF16;
  const Tensor z = testing::random_normal({8, 12, 10, 6}, 23);  // 40 x 24 px: 4 x 2 tiles of 16
  ASSERT_OK_AND_ASSIGN(const int64_t tokens, h3vae::gpu::max_tile_tokens(weights_.config, options, 10, 6));
  const h3vae::TilePlan plan = h3vae::plan_tiles(weights_.config, 10, 6, options);
  ASSERT_EQ(plan.rows.count(), 4);
  ASSERT_EQ(plan.cols.count(), 2);
  auto dec = make_decoder(weights_, tokens);
  ASSERT_OK_AND_ASSIGN(Tensor got, dec->decode(z, options));
  std::vector<Tensor> clips;
  for (int64_t i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor clip, dec->decode_chunk(z, i, options));
    clips.push_back(clip);
  }
  Expected<Tensor> host = h3vae::assemble_chunks(weights_.config, clips, options.blend_precision);
  ASSERT_TRUE(host.has_value());
  ASSERT_EQ(got.shape(), host->shape());
  EXPECT_TRUE(bit_equal(got, *host));
  const testing::Comparison c = testing::compare(got, *host);
  print_case("vae device stitch vs host (f16)", "[8, 12, 10, 6]", c);
}

// What `orochi generate` does with several GPUs: a helper decoder on GPU 1 (or a second one on GPU 0
// when there is one GPU) decodes the later chunks while GPU 0 decodes the first, and GPU 0 fades them
// in: three chunks, f16 blends, the same bits as decode() on one GPU.
TEST_F(VaeGpuDecoder, ChunksSharedWithAHelperGpuGiveTheOneGpuVideo) {
  h3vae::DecodeOptions options = options_;
  options.blend_precision = h3vae::BlendPrecision::kF16;
  const Tensor z = testing::random_normal({8, 17, 6, 6}, 29);  // 17 = 5·3 + 2: three chunks
  ASSERT_OK_AND_ASSIGN(const int64_t tokens, h3vae::gpu::max_tile_tokens(weights_.config, options, 6, 6));
  auto one = make_decoder(weights_, tokens);
  ASSERT_OK_AND_ASSIGN(Tensor whole, one->decode(z, options));
  int gpus = 0;
  ASSERT_EQ(cudaGetDeviceCount(&gpus), cudaSuccess);
  auto helper = GpuVideoDecoder::create(weights_.config, gpus > 1 ? 1 : 0, tokens);
  // One worker per decoding GPU, as the engine's CUDA backend makes for the decode.
  auto workers = dist::make_gpu_context({0, gpus > 1 ? 1 : 0});
  ASSERT_TRUE(workers.has_value()) << workers.status().to_string();
  ASSERT_TRUE(helper.has_value()) << helper.status().to_string();
  ASSERT_STATUS_OK((*helper)->upload(weights_));
  std::vector<std::pair<int64_t, int64_t>> progress;
  ASSERT_OK_AND_ASSIGN(Tensor shared, one->decode(z, options, [&](int64_t d, int64_t n) { progress.push_back({d, n}); },
                                                  {helper->get()}, workers->get()));
  EXPECT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back(), (std::pair<int64_t, int64_t>{3, 3}));
  const bool same = bit_equal(shared, whole);
  EXPECT_TRUE(same) << "on " << (gpus > 1 ? "GPUs 0 and 1" : "GPU 0 twice");
  std::printf("vae decode shared with a helper on %s: bit-identical to one GPU: %s\n",
              gpus > 1 ? "GPU 1" : "GPU 0", same ? "yes" : "NO");
  // The helper's own part: chunks it decodes stay on its GPU; a run past the end is refused.
  ASSERT_OK_AND_ASSIGN(auto part, (*helper)->decode_clips(z, 1, 3, options));
  EXPECT_EQ(part.clips.size(), 2u);
  EXPECT_FALSE((*helper)->decode_clips(z, 2, 4, options).has_value());
  EXPECT_FALSE(one->decode(z, options, nullptr, {one.get()}, workers->get()).has_value());  // not its own helper
  EXPECT_FALSE(one->decode(z, options, nullptr, {helper->get()}).has_value());  // helpers need the workers
}

TEST_F(VaeGpuDecoder, RandomInitIsReproducibleAndFinite) {
  auto a = GpuVideoDecoder::create(small_config(), 0, 112);
  auto b = GpuVideoDecoder::create(small_config(), 0, 112);
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_STATUS_OK((*a)->init_random(5));
  ASSERT_STATUS_OK((*b)->init_random(5));
  const Tensor z = testing::random_normal({8, 7, 4, 4}, 31);
  ASSERT_OK_AND_ASSIGN(Tensor ta, (*a)->decode_tile(z));
  ASSERT_OK_AND_ASSIGN(Tensor tb, (*b)->decode_tile(z));
  EXPECT_TRUE(bit_equal(ta, tb));
  EXPECT_EQ(count_nan(ta), 0);
  ASSERT_STATUS_OK((*b)->init_random(6));
  ASSERT_OK_AND_ASSIGN(Tensor tc, (*b)->decode_tile(z));
  EXPECT_FALSE(bit_equal(ta, tc));
}

TEST_F(VaeGpuDecoder, BadInputIsRefusedWithAStatus) {
  EXPECT_FALSE(GpuVideoDecoder::create(small_config(), 0, 0).has_value());
  auto dec = GpuVideoDecoder::create(small_config(), 0, 112);
  ASSERT_TRUE(dec.has_value());
  const Tensor z = testing::random_normal({8, 12, 6, 6}, 41);
  EXPECT_FALSE((*dec)->decode(z, options_).has_value());  // no weights yet
  ASSERT_STATUS_OK((*dec)->upload(weights_));
  EXPECT_FALSE((*dec)->decode(testing::random_normal({4, 12, 6, 6}, 42), options_).has_value());  // channels
  EXPECT_FALSE((*dec)->decode(testing::random_normal({8, 11, 6, 6}, 43), options_).has_value());  // frames
  EXPECT_FALSE((*dec)->decode(z, h3vae::DecodeOptions{.tiling = false}).has_value());  // 252 tokens > 112
  EXPECT_FALSE((*dec)->decode_tile(testing::random_normal({8, 7, 5, 5}, 44)).has_value());  // 175 tokens
  EXPECT_FALSE((*dec)->decode_chunk(z, 2, options_).has_value());
  h3vae::VideoVaeConfig one_layer = small_config();
  one_layer.decoder_num_layers = 1;
  const h3vae::DecoderWeights other = random_host_weights(one_layer, 4);
  EXPECT_FALSE((*dec)->upload(other).is_ok());
  ASSERT_OK_AND_ASSIGN(Tensor dz, cuda::upload(z, arena(), DType::kF32, stream()));
  EXPECT_FALSE((*dec)->decode(dz, options_).has_value());  // device latents
  EXPECT_TRUE((*dec)->decode(z, options_).has_value());    // still usable after the refusals
}

// The release's shapes (2.42 B parameters, 1792-token tiles) on random weights: finite, and timed.
TEST(VaeGpuRealShapes, RandomWeightsTileIsFiniteAndDeterministic) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  const h3vae::VideoVaeConfig c;  // the release
  auto dec = GpuVideoDecoder::create(c, 0, 7 * 16 * 16);
  ASSERT_TRUE(dec.has_value()) << dec.status().to_string();
  ASSERT_STATUS_OK((*dec)->init_random(1));
  std::printf("video VAE on GPU: %.2f GB weights, %.1f MB tile activations\n", (*dec)->weight_bytes() / 1e9,
              (*dec)->activation_bytes_used() / 1e6);
  const Tensor z = testing::random_normal({24, 7, 16, 16}, 51);
  ASSERT_OK_AND_ASSIGN(Tensor first, (*dec)->decode_tile(z));  // warms plans and cuDNN graphs
  ASSERT_EQ(first.shape(), (Shape{3, 28, 256, 256}));
  EXPECT_EQ(count_nan(first), 0);
  double sq = 0;
  for (int64_t i = 0; i < first.numel(); ++i) sq += double(first.data<float>()[i]) * first.data<float>()[i];
  EXPECT_TRUE(std::isfinite(sq) && sq > 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = 5;
  for (int i = 0; i < reps; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor again, (*dec)->decode_tile(z));
    EXPECT_TRUE(bit_equal(again, first));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  std::printf("video VAE tile 7x16x16 (1797 tokens, 36 blocks): %.1f ms per tile incl. host transfers, rms %.3g\n", ms,
              std::sqrt(sq / first.numel()));
}

}  // namespace
}  // namespace orochi
