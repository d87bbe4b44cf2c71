// The Qwen3-VL vision tower on the GPU (bf16): each new op against its CPU step (LayerNorm with bias,
// GELU tanh/erf, the q/k/v split with the 2-D RoPE, the interpolated position embeddings), then the
// whole tower on the tiny golden model (two images of different sizes and a 2-block video) against
// the CPU fp32 reference and transformers' own bf16 run. Skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "backends/cpu/ops_vae.h"
#include "models/qwen3vl/cuda/gpu_vision_tower.h"
#include "models/qwen3vl/cuda/vision_ops.h"
#include "models/qwen3vl/vision_layout.h"
#include "models/qwen3vl/vision_ops_cpu.h"
#include "core/random.h"
#include "support/golden.h"
#include "support/paths.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using cuda_test::random_bf16_values;

class VisionOpsTest : public cuda_test::GpuTest {
 protected:
  Tensor up(const Tensor& host, DType dtype = DType::kBF16) {
    Expected<Tensor> t = cuda::upload(host, arena(), dtype, stream());
    OROCHI_CHECK(t.has_value(), t.status().to_string());
    return *t;
  }
  Tensor down(const Tensor& device) {
    Expected<Tensor> t = cuda::download(device, stream());
    OROCHI_CHECK(t.has_value(), t.status().to_string());
    return t->to(DType::kF32);
  }
  Tensor empty(const Shape& shape, DType dtype = DType::kBF16) {
    Expected<Tensor> t = arena().tensor(shape, dtype);
    OROCHI_CHECK(t.has_value(), t.status().to_string());
    return *t;
  }
  static void report(const char* op, const Tensor& ours, const Tensor& ref, double tol) {
    const testing::Comparison c = testing::compare(ours, ref);
    std::printf("[cuda-op] %s %s %s\n", op, shape_to_string(ours.shape()).c_str(), c.summary().c_str());
    EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= tol) << op << ": " << c.summary();
  }
};

// One bf16 output rounding (rel L2 ~ 1e-3) plus the inputs' own: 4e-3 bounds every op here.
constexpr double kOneRounding = 4e-3;

TEST_F(VisionOpsTest, LayerNormMatchesCpu) {
  for (int64_t C : {16, 1152, 4608}) {
    const Tensor x = random_bf16_values({37, C}, 2.0f, 0.5f);
    const Tensor w = random_bf16_values({C}, 0.1f, 1.0f), b = random_bf16_values({C}, 0.05f);
    const Tensor out = empty({37, C});
    ASSERT_STATUS_OK(qwen3vl::gpu::layer_norm(up(x), up(w), up(b), 1e-6f, out, stream()));
    report("vision_layer_norm", down(out), cpu::layer_norm(x, w, b, 1e-6f), kOneRounding);
  }
}

TEST_F(VisionOpsTest, GeluMatchesCpu) {
  for (bool tanh_approx : {true, false}) {
    const Tensor x = random_bf16_values({64, 300}, 3.0f);
    const Tensor d = up(x);
    ASSERT_STATUS_OK(qwen3vl::gpu::gelu_inplace(d, tanh_approx, stream()));
    Tensor ref = x.clone();
    qwen3vl::gelu_inplace(ref, tanh_approx ? qwen3vl::VisionActivation::kGeluTanh : qwen3vl::VisionActivation::kGeluErf);
    report(tanh_approx ? "vision_gelu_tanh" : "vision_gelu_erf", down(d), ref, kOneRounding);
  }
}

TEST_F(VisionOpsTest, QkvSplitRopeMatchesCpu) {
  qwen3vl::VisionConfig c = qwen3vl::VisionConfig::qwen3vl_32b();
  const std::vector<qwen3vl::GridThw> grids = {{1, 6, 8}, {2, 4, 4}};
  const cpu::RopeTable rope = qwen3vl::vision_rope_table(c, grids);
  const int64_t N = 48 + 32, H = c.num_heads, D = c.head_dim();
  const Tensor qkv = random_bf16_values({N, 3 * H * D});
  const Tensor q = empty({N, H, D}), k = empty({N, H, D}), v = empty({N, H, D});
  ASSERT_STATUS_OK(qwen3vl::gpu::qkv_split_rope(up(qkv), up(rope.cos, DType::kF32), up(rope.sin, DType::kF32), q, k,
                                                v, stream()));
  const qwen3vl::SplitHeads ref = qwen3vl::split_qkv_rope(qkv, H, rope);
  report("vision_qkv_rope q", down(q), ref.q, kOneRounding);
  report("vision_qkv_rope k", down(k), ref.k, kOneRounding);
  report("vision_qkv_rope v", down(v), ref.v, 0.0);  // a copy
}

TEST_F(VisionOpsTest, PositionEmbeddingsMatchCpu) {
  qwen3vl::VisionConfig c = qwen3vl::VisionConfig::qwen3vl_32b();
  const std::vector<qwen3vl::GridThw> grids = {{1, 10, 14}, {2, 6, 4}};
  const qwen3vl::PositionTaps taps = qwen3vl::position_taps(c, grids);
  const int64_t N = 140 + 48, C = c.hidden_size;
  const Tensor table = random_bf16_values({c.num_position_embeddings, C});
  const Tensor x = random_bf16_values({N, C});
  const Tensor d = up(x);
  ASSERT_STATUS_OK(qwen3vl::gpu::add_position_embeddings(d, up(table), up(Tensor::from_ints(taps.index, {N * 4}), DType::kI64),
                                                         up(Tensor::from_floats(taps.weight, {N * 4}), DType::kF32),
                                                         stream()));
  Tensor ref = x.clone();
  cpu::add_inplace(ref, qwen3vl::interpolated_positions(table, taps));
  report("vision_add_position_embeddings", down(d), ref, kOneRounding);
}

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_vision"; }

TEST(Qwen3VLVisionGpu, TinyGoldenWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<qwen3vl::VisionWeights> w = qwen3vl::load_vision_weights(data_dir() + "/text_encoder");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  ASSERT_TRUE(g.has_value()) << g.status().to_string();
  const Tensor pixels = testing::golden_tensor(*g, "in.pixel_values");
  const Tensor grid_t = testing::golden_tensor(*g, "in.grid_thw");
  std::vector<qwen3vl::GridThw> grids;
  for (int64_t i = 0; i < grid_t.dim(0); ++i)
    grids.push_back({grid_t.data<int64_t>()[3 * i], grid_t.data<int64_t>()[3 * i + 1], grid_t.data<int64_t>()[3 * i + 2]});

  auto tower = qwen3vl::gpu::GpuVisionTower::create(w->config, 0, 256);
  ASSERT_TRUE(tower.has_value()) << tower.status().to_string();
  EXPECT_EQ((*tower)->run(pixels, grids).status().code(), ErrorCode::kInternal);  // no weights yet
  ASSERT_TRUE((*tower)->upload(*w).is_ok());
  Expected<qwen3vl::VisionFeatures> gpu = (*tower)->run(pixels, grids);
  ASSERT_TRUE(gpu.has_value()) << gpu.status().to_string();
  Expected<qwen3vl::VisionFeatures> cpu = qwen3vl::run_vision_tower(*w, pixels, grids);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().to_string();

  const auto vs_cpu = testing::compare(gpu->features, cpu->features);
  const auto vs_bf16 = testing::compare(gpu->features, testing::golden_tensor(*g, "bf16.merger"));
  const auto ref_gap = testing::compare(testing::golden_tensor(*g, "bf16.merger"), cpu->features);
  std::printf("Qwen3-VL vision tiny on GPU: merger vs CPU fp32 %s\n  vs transformers bf16 %s\n"
              "  (transformers bf16 vs fp32 %s)\n",
              vs_cpu.summary().c_str(), vs_bf16.summary().c_str(), ref_gap.summary().c_str());
  EXPECT_TRUE(vs_cpu.same_nonfinite && vs_cpu.rel_l2 <= 2e-2) << vs_cpu.summary();
  EXPECT_TRUE(vs_bf16.same_nonfinite && vs_bf16.rel_l2 <= 2e-2) << vs_bf16.summary();
  ASSERT_EQ(gpu->deepstack.size(), cpu->deepstack.size());
  for (size_t k = 0; k < gpu->deepstack.size(); ++k) {
    const auto c = testing::compare(gpu->deepstack[k], cpu->deepstack[k]);
    std::printf("  deepstack.%zu vs CPU fp32 %s\n", k, c.summary().c_str());
    EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= 2e-2) << c.summary();
  }

  // The device outputs (bf16, what the GPU text encoder takes) hold the same values.
  Expected<qwen3vl::VisionFeatures> on_device = (*tower)->run_on_device(pixels, grids);
  ASSERT_TRUE(on_device.has_value()) << on_device.status().to_string();
  EXPECT_EQ(on_device->features.device().kind, DeviceKind::kCUDA);
  EXPECT_EQ(on_device->features.dtype(), DType::kBF16);
  ASSERT_EQ(on_device->deepstack.size(), gpu->deepstack.size());
  Expected<Tensor> device_features = cuda::download(on_device->features);
  ASSERT_TRUE(device_features.has_value());
  EXPECT_TENSOR_CLOSE(device_features->to(DType::kF32), gpu->features, 0.0);

  // Deterministic; too many patches for the plan is refused.
  Expected<qwen3vl::VisionFeatures> again = (*tower)->run(pixels, grids);
  ASSERT_TRUE(again.has_value());
  EXPECT_TENSOR_CLOSE(again->features, gpu->features, 0.0);
  auto small = qwen3vl::gpu::GpuVisionTower::create(w->config, 0, 64);
  ASSERT_TRUE(small.has_value());
  ASSERT_TRUE((*small)->upload(*w).is_ok());
  EXPECT_EQ((*small)->run(pixels, grids).status().code(), ErrorCode::kInvalidArgument);
}

// Random host weights of `c`'s shapes: matrices N(0, 1/fan_in), biases N(0, 0.02²), norms 1 + N(0, 0.05²).
qwen3vl::VisionWeights random_weights(const qwen3vl::VisionConfig& c) {
  uint64_t stream = 0;
  auto normal = [&](const Shape& shape, float scale, float mean) {
    Tensor t = normal_tensor(shape, 0x51710, ++stream);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = mean + scale * p[i];
    return t;
  };
  auto linear = [&](int64_t out, int64_t in) {
    return qwen3vl::VisionLinear{normal({out, in}, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f),
                                 normal({out}, 0.02f, 0.0f)};
  };
  auto norm = [&](int64_t n) { return qwen3vl::VisionNorm{normal({n}, 0.05f, 1.0f), normal({n}, 0.02f, 0.0f)}; };
  auto merger = [&](bool after) {
    return qwen3vl::VisionMergerWeights{norm(after ? c.merged_width() : c.hidden_size),
                                        linear(c.merged_width(), c.merged_width()),
                                        linear(c.out_hidden_size, c.merged_width()), after};
  };
  qwen3vl::VisionWeights w;
  w.config = c;
  w.patch_embed = linear(c.hidden_size, c.patch_values());
  w.pos_embed = normal({c.num_position_embeddings, c.hidden_size}, 0.5f, 0.0f);
  for (int64_t i = 0; i < c.depth; ++i)
    w.blocks.push_back({norm(c.hidden_size), norm(c.hidden_size), linear(3 * c.hidden_size, c.hidden_size),
                        linear(c.hidden_size, c.hidden_size), linear(c.intermediate_size, c.hidden_size),
                        linear(c.hidden_size, c.intermediate_size)});
  w.merger = merger(false);
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k) w.deepstack_mergers.push_back(merger(true));
  return w;
}

// The released shapes (27 blocks of 1152, 16 heads of 72, MLP 4304, out 5120, 3 DeepStack mergers)
// with random weights: a small image against the CPU reference (head dim 72 on cuDNN, the real
// widths), then a 1344x768 keyframe plus an 11-frame 1344x768 video (6 blocks) timed.
TEST(Qwen3VLVisionGpu, ReleaseShapesMatchCpuAndAreTimed) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  const qwen3vl::VisionConfig c = qwen3vl::VisionConfig::qwen3vl_32b();
  const qwen3vl::VisionWeights w = random_weights(c);
  const std::vector<qwen3vl::GridThw> small = {{1, 4, 6}, {2, 4, 4}};  // 24 + 32 patches, 3 segments
  const Tensor small_pixels = random_bf16_values({56, c.patch_values()}, 0.5f);
  const std::vector<qwen3vl::GridThw> big = {{1, 48, 84}, {6, 48, 84}};
  const int64_t big_n = 48 * 84 * 7;
  auto tower = qwen3vl::gpu::GpuVisionTower::create(c, 0, big_n);
  ASSERT_TRUE(tower.has_value()) << tower.status().to_string();
  ASSERT_TRUE((*tower)->upload(w).is_ok());

  Expected<qwen3vl::VisionFeatures> gpu = (*tower)->run(small_pixels, small);
  ASSERT_TRUE(gpu.has_value()) << gpu.status().to_string();
  Expected<qwen3vl::VisionFeatures> cpu = qwen3vl::run_vision_tower(w, small_pixels, small);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().to_string();
  const auto vs_cpu = testing::compare(gpu->features, cpu->features);
  std::printf("Qwen3-VL vision, release shapes, 56 patches: merger vs CPU fp32 %s\n", vs_cpu.summary().c_str());
  EXPECT_TRUE(vs_cpu.same_nonfinite && vs_cpu.rel_l2 <= 3e-2) << vs_cpu.summary();
  for (size_t k = 0; k < 3; ++k) {
    const auto d = testing::compare(gpu->deepstack[k], cpu->deepstack[k]);
    std::printf("  deepstack.%zu vs CPU fp32 %s\n", k, d.summary().c_str());
    EXPECT_TRUE(d.same_nonfinite && d.rel_l2 <= 3e-2) << d.summary();
  }

  const Tensor big_pixels = random_bf16_values({big_n, c.patch_values()}, 0.5f);
  for (int pass = 0; pass < 3; ++pass) {  // the first builds the GEMM plans and cuDNN graphs
    const auto t0 = std::chrono::steady_clock::now();
    Expected<qwen3vl::VisionFeatures> out = (*tower)->run(big_pixels, big);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    ASSERT_EQ(out->features.shape(), (Shape{big_n / 4, c.out_hidden_size}));
    int64_t nonfinite = 0;
    for (int64_t i = 0; i < out->features.numel(); ++i) nonfinite += !std::isfinite(out->features.data<float>()[i]);
    EXPECT_EQ(nonfinite, 0);
    std::printf("[vision-tower] 1344x768 image + 11-frame video, %lld patches: pass %d %.1f ms (host in/out included)\n",
                static_cast<long long>(big_n), pass, ms);
  }
}

}  // namespace
}  // namespace orochi
