// The low-precision GEMM benchmark of issue 25 (opt-in: a DISABLED_ test, so the GPU test runs skip
// it; scripts/device/bench_fp8_gemm.sh runs it): H3's block linears at the packed row count of a
// 124-frame t2va request at 480p and 768p (M = 15,100 / 37,966 rows), bf16 vs fp8 e4m3 (cuBLASLt
// outer-vector scales, with and without fast accumulation, and the unit-scales + epilogue path) vs
// int8 W8A8, each the median of 10 timed calls after 2 warm-ups (tests/cuda/call_timing.h) with
// TFLOP/s, and its rel L2 to the bf16 GEMM and to an f32 GEMM of the same bf16 operands on 512
// sampled rows. Activations N(0, 1), weights N(0, 1/K), drawn on the GPU; activation quantization
// (per token) is timed on its own, as it will be fused into the kernels that produce them.
// Lines: "[bench-gemm] ..." per layer and variant, "[bench-gemm-quant] ..." per activation shape,
// "[bench-gemm-block] ..." per resolution: one block's linears (q, k, v, out, FFN in, FFN out).
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_quantized.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/quantize.h"
#include "backends/cuda/random_fill.h"
#include "cuda/call_timing.h"
#include "models/h3/config.h"
#include "pipeline/packed_layout.h"
#include "pipeline/video_geometry.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr int64_t kSampledRows = 512;

struct Layer {
  std::string name;
  int64_t N, K;
  int per_block;  // calls of this shape in one block (q, k and v share one)
};

struct Variant {
  std::string name;
  DType format;  // kBF16 for the reference GEMM
  cuda::QuantizedGemmOptions options;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {{"bf16", DType::kBF16, {}},
                                         {"fp8", DType::kF8E4M3, {false, false}},
                                         {"fp8-fast-accum", DType::kF8E4M3, {true, false}},
                                         {"fp8-unit-scales", DType::kF8E4M3, {false, true}},
                                         {"int8", DType::kI8, {}}};
  return v;
}

int64_t packed_rows(int64_t width, int64_t height) {
  auto geometry = pipeline::video_geometry(width, height, 124);
  OROCHI_CHECK(geometry.has_value(), geometry.status().to_string());
  const pipeline::LayoutRequest request{.text_rows = 256, .latent_frames = geometry->latent_frames,
                                        .latent_height = geometry->latent_height,
                                        .latent_width = geometry->latent_width,
                                        .audio_latents = geometry->audio_latents, .keyframes = {}};
  auto layout = pipeline::build_packed_layout(request);
  OROCHI_CHECK(layout.has_value(), layout.status().to_string());
  return layout->rows;
}

class BenchGemm : public GpuTest {
 protected:
  BenchGemm() : GpuTest(size_t{40} << 30) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto q = cuda::QuantizedGemmRunner::create(0);
    ASSERT_TRUE(q.has_value()) << q.status().to_string();
    quantized_ = std::move(*q);
    auto b = cuda::GemmRunner::create(0);
    ASSERT_TRUE(b.has_value()) << b.status().to_string();
    bf16_ = std::move(*b);
  }

  // Sampled rows of a device [M, N] result, on the host in f32.
  Tensor sampled(const Tensor& y, const Tensor& idx) {
    auto rows = cuda::gather_rows(y, idx, arena(), stream());
    OROCHI_CHECK(rows.has_value(), rows.status().to_string());
    return to_host_f32(*rows, stream());
  }

  std::unique_ptr<cuda::QuantizedGemmRunner> quantized_;
  std::unique_ptr<cuda::GemmRunner> bf16_;
};

TEST_F(BenchGemm, DISABLED_H3Layers) {
  const h3::H3Config c;  // the released shapes
  const std::vector<Layer> layers = {{"to_q/k/v", c.inner_dim(), c.hidden_size, 3},
                                     {"to_out", c.hidden_size, c.inner_dim(), 1},
                                     {"ff.net.0.proj", 2 * c.ffn_dim, c.hidden_size, 1},
                                     {"ff.net.2", c.hidden_size, c.ffn_dim, 1}};
  struct Res {
    const char* name;
    int64_t width, height;
  };
  for (const Res& res : {Res{"480p", 832, 480}, Res{"768p", 1344, 768}}) {
    const int64_t M = packed_rows(res.width, res.height);
    std::map<std::string, double> block_ms;
    for (const Layer& layer : layers) {
      const size_t mark = arena().mark();
      const int64_t N = layer.N, K = layer.K;
      const double flop = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      ASSERT_OK_AND_ASSIGN(Tensor x, arena().tensor({M, K}, DType::kBF16));
      ASSERT_OK_AND_ASSIGN(Tensor w, arena().tensor({N, K}, DType::kBF16));
      ASSERT_STATUS_OK(cuda::fill_normal(x, 0xBE7C, 1, 0.0f, 1.0f, stream()));
      ASSERT_STATUS_OK(cuda::fill_normal(w, 0xBE7C, 2, 0.0f, 1.0f / std::sqrt(static_cast<float>(K)), stream()));
      std::vector<int64_t> rows;
      for (int64_t i = 0; i < kSampledRows; ++i) rows.push_back(i * (M - 1) / (kSampledRows - 1));
      ASSERT_OK_AND_ASSIGN(Tensor idx, cuda::upload(Tensor::from_ints(rows, {kSampledRows}), arena(), DType::kI64, stream()));
      // The f32 truth of the sampled rows: f32 GEMM (no TF32) of the same bf16 operands.
      ASSERT_OK_AND_ASSIGN(Tensor x_rows, cuda::gather_rows(x, idx, arena(), stream()));
      ASSERT_OK_AND_ASSIGN(Tensor x_rows32, cuda::cast(x_rows, DType::kF32, arena(), stream()));
      ASSERT_OK_AND_ASSIGN(Tensor w32, cuda::cast(w, DType::kF32, arena(), stream()));
      ASSERT_OK_AND_ASSIGN(Tensor y32, bf16_->linear(x_rows32, w32, nullptr, arena(), stream()));
      const Tensor truth = to_host_f32(y32, stream());

      ASSERT_OK_AND_ASSIGN(Tensor y_ref, arena().tensor({M, N}, DType::kBF16));
      ASSERT_OK_AND_ASSIGN(Tensor y, arena().tensor({M, N}, DType::kBF16));
      Tensor bf16_rows;
      std::map<DType, std::pair<RowQuantized, RowQuantized>> operands;  // format -> (x, w)
      for (DType format : {DType::kF8E4M3, DType::kI8}) {
        ASSERT_OK_AND_ASSIGN(RowQuantized qw, cuda::quantize_rows(w, format, arena(), stream()));
        ASSERT_OK_AND_ASSIGN(RowQuantized qx, cuda::quantize_rows(x, format, arena(), stream()));
        operands[format] = {qx, qw};
        if (layer.per_block == 3 || layer.name == "ff.net.2" || layer.name == "to_out") {  // each activation shape once
          ASSERT_OK_AND_ASSIGN(cuda_timing::CallTimes t,
                               cuda_timing::time_calls([&] { return cuda::quantize_rows(x, qx, stream()); }, stream()));
          std::printf("[bench-gemm-quant] res=%s M=%lld K=%lld format=%s quantize_x_ms=%.3f (%.0f GB/s)\n", res.name,
                      static_cast<long long>(M), static_cast<long long>(K), dtype_name(format), t.median_ms,
                      static_cast<double>(M * K * 3) / (t.median_ms * 1e6));
        }
      }
      for (const Variant& v : variants()) {
        const bool reference = v.format == DType::kBF16;
        const Tensor& out = reference ? y_ref : y;
        ASSERT_STATUS_OK(poison(out, stream()));
        const auto call = [&]() -> Status {
          if (reference) return bf16_->linear(x, w, nullptr, y_ref, stream());
          const auto& [qx, qw] = operands[v.format];
          return quantized_->linear(qx, qw, nullptr, y, arena(), stream(), v.options);
        };
        ASSERT_OK_AND_ASSIGN(cuda_timing::CallTimes t, cuda_timing::time_calls(call, stream()));
        const Tensor got = sampled(out, idx);
        if (reference) bf16_rows = got;
        const testing::Comparison vs_bf16 = testing::compare(got, bf16_rows);
        const testing::Comparison vs_f32 = testing::compare(got, truth);
        const std::string path = reference ? "cuBLASLt bf16" : cuda::quantized_gemm_path_name(quantized_->last_path());
        std::printf("[bench-gemm] res=%s M=%lld layer=%-13s N=%lld K=%lld variant=%-15s median_ms=%8.3f min_ms=%8.3f "
                    "tflops=%7.1f rel_l2_vs_bf16=%.3e rel_l2_vs_f32=%.3e path=\"%s\"\n",
                    res.name, static_cast<long long>(M), layer.name.c_str(), static_cast<long long>(N),
                    static_cast<long long>(K), v.name.c_str(), t.median_ms, t.min_ms, flop / (t.median_ms * 1e9),
                    vs_bf16.rel_l2, vs_f32.rel_l2, path.c_str());
        std::fflush(stdout);
        block_ms[v.name] += layer.per_block * t.median_ms;
        EXPECT_EQ(count_nan(got), 0) << v.name << " " << layer.name;
        // Sanity, not a target: quantization at these widths costs a few percent, bf16 ~2e-3.
        EXPECT_LE(vs_f32.rel_l2, v.format == DType::kBF16 ? 5e-3 : 8e-2) << v.name << " " << layer.name;
      }
      arena().reset(mark);
    }
    std::printf("[bench-gemm-block] res=%s M=%lld one block's linears (3 x q/k/v, out, FFN in, FFN out):", res.name,
                static_cast<long long>(M));
    for (const Variant& v : variants())
      std::printf(" %s %.2f ms (%.2fx)", v.name.c_str(), block_ms[v.name], block_ms["bf16"] / block_ms[v.name]);
    std::printf("; x%lld blocks: bf16 %.3f s, fp8 %.3f s, int8 %.3f s\n", static_cast<long long>(c.num_layers),
                block_ms["bf16"] * c.num_layers / 1e3, block_ms["fp8"] * c.num_layers / 1e3,
                block_ms["int8"] * c.num_layers / 1e3);
    std::fflush(stdout);
  }
  const std::string& refusal = quantized_->outer_vector_refusal();
  std::printf("[bench-gemm] outer-vector fp8 scales %s\n",
              refusal.empty() ? "offered by this cuBLASLt on this GPU for every shape" : ("REFUSED: " + refusal).c_str());
}

}  // namespace
}  // namespace orochi
