// cuDNN's FP8 attention (backends/cuda/attention_cudnn_fp8.h; issue 25's comparison for our own
// FP8 flash kernel) against the exact f32 CPU attention at the H3 denoiser's shapes (56 heads x
// 128, S = 32,760 at 480p and 32,768, S_q != S_kv), beside cuDNN bf16 and our bf16 flash kernel on
// the same inputs, with and without SageAttention's K smoothing; then the timing at 480p, 768p and
// ref2va lengths.
// The device log is read from the marked lines:
//   CUDNN_FP8_ATTN <case> rel_l2 .. cos .. (fp8, then smooth_k, cudnn_bf16, flash_bf16 beside it)
//   CUDNN_FP8_ATTN_TIME S=<n> bf16_flash_ms .. cudnn_bf16_ms .. cudnn_fp8_ms .. quantize_ms ..
// Where cuDNN has no FP8 attention (GPU below Hopper, cuDNN < 9.1 or 9.10.0) every test prints
// CUDNN_FP8_ATTN unsupported: <cuDNN's reasons and versions> and skips.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/attention_cudnn_fp8.h"
#include "backends/cuda/attention_flash.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/random_fill.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;
using cuda::AttentionShape;

constexpr int64_t kHeads = 56, kHeadDim = 128;  // H3's denoiser (docs/MODELS_H3.md)

// Device q [S_q, H·D], k and v [S_kv, H·D] bf16: q, k ~ N(0, 1.5²) (peaked softmax: scores of std
// ~2.25), v ~ N(0, 1); with key_bias, k gets a per-channel offset of up to ±6 shared by every key
// (the channel bias of DiT keys that K smoothing removes).
struct Operands {
  AttentionShape shape;
  Tensor q, k, v;
};

Status make_operands(cuda::DeviceArena& arena, const AttentionShape& shape, bool key_bias, uint64_t seed,
                     cudaStream_t stream, Operands& out) {
  const int64_t C = shape.heads * shape.head_dim;
  out.shape = shape;
  OROCHI_ASSIGN_OR_RETURN(out.q, arena.tensor({shape.s_q, C}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(out.k, arena.tensor({shape.s_kv, C}, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(out.v, arena.tensor({shape.s_kv, C}, DType::kBF16));
  OROCHI_RETURN_IF_ERROR(cuda::fill_normal(out.q, seed, 1, 0.0f, 1.5f, stream));
  OROCHI_RETURN_IF_ERROR(cuda::fill_normal(out.k, seed, 2, 0.0f, 1.5f, stream));
  OROCHI_RETURN_IF_ERROR(cuda::fill_normal(out.v, seed, 3, 0.0f, 1.0f, stream));
  if (!key_bias) return Status::ok();
  // The bias rows: one uploaded row, doubled by device copies.
  const size_t mark = arena.mark();
  OROCHI_ASSIGN_OR_RETURN(Tensor bias, arena.tensor({shape.s_kv, C}, DType::kBF16));
  Tensor row = Tensor::empty({1, C}, DType::kF32);
  for (int64_t c = 0; c < C; ++c) row.data<float>()[c] = 6.0f * std::sin(0.37f * static_cast<float>(c));
  const Tensor row_bf16 = row.to(DType::kBF16);
  const size_t row_bytes = static_cast<size_t>(C) * 2, all = bias.nbytes();
  char* b = static_cast<char*>(bias.raw_data());
  OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaMemcpy(b, row_bf16.raw_data(), row_bytes, cudaMemcpyHostToDevice), "bias row"));
  for (size_t done = row_bytes; done < all; done *= 2)
    OROCHI_RETURN_IF_ERROR(cuda::cuda_status(
        cudaMemcpyAsync(b + done, b, std::min(done, all - done), cudaMemcpyDeviceToDevice, stream), "bias rows"));
  OROCHI_RETURN_IF_ERROR(cuda::add_inplace(out.k, bias, stream));
  OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaStreamSynchronize(stream), "key bias"));
  arena.reset(mark);
  return Status::ok();
}

// Rows `rows` of heads `heads` of a device bf16 [S, H·D] tensor -> host f32 [rows, heads, D].
Tensor gather_host(const void* device, int64_t H, int64_t D, const std::vector<int64_t>& rows,
                   const std::vector<int64_t>& heads) {
  const int64_t C = H * D, n = static_cast<int64_t>(heads.size()), R = static_cast<int64_t>(rows.size());
  std::vector<uint16_t> row(static_cast<size_t>(C));
  Tensor out = Tensor::empty({R, n, D}, DType::kF32);
  for (int64_t i = 0; i < R; ++i) {
    cudaMemcpy(row.data(), static_cast<const char*>(device) + rows[i] * C * 2, static_cast<size_t>(C) * 2,
               cudaMemcpyDeviceToHost);
    for (int64_t h = 0; h < n; ++h)
      for (int64_t d = 0; d < D; ++d) out.data<float>()[(i * n + h) * D + d] = bf16_to_f32(row[heads[h] * D + d]);
  }
  return out;
}

std::vector<int64_t> all_rows(int64_t S) {
  std::vector<int64_t> rows(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) rows[i] = i;
  return rows;
}

// 64 query rows spread over [0, S), the first and the last included.
std::vector<int64_t> spread_rows(int64_t S) {
  std::vector<int64_t> rows;
  const int64_t n = std::min<int64_t>(64, S);
  for (int64_t i = 0; i < n; ++i) rows.push_back(n == 1 ? 0 : i * (S - 1) / (n - 1));
  return rows;
}

AttentionShape fp8_of(AttentionShape s) {
  s.dtype = DType::kF8E4M3;
  return s;
}

class CudnnFp8AttentionTest : public GpuTest {
 protected:
  CudnnFp8AttentionTest() : GpuTest(size_t{24} << 30) {}

  // Builds the FP8 plan for `shape`; false, having printed why, where cuDNN has none (any other
  // failure also fails the test). Callers go on with their other shapes and skip when none ran.
  bool fp8_supported(cuda::CudnnFp8Attention& fp8, const AttentionShape& shape) {
    const Status built = fp8.prepare(shape);
    if (built.is_ok()) return true;
    std::printf("CUDNN_FP8_ATTN unsupported: %s\n", built.to_string().c_str());
    std::fflush(stdout);
    EXPECT_EQ(built.code(), ErrorCode::kUnsupported) << "cuDNN FP8 attention failed otherwise: " << built.to_string();
    return false;
  }
  // Whether our bf16 flash kernel runs `shape` here (a Hopper).
  static bool flash_runs(const AttentionShape& shape) { return cuda::flash_attention_unsupported_reason(shape).empty(); }
};

struct AccuracyCase {
  const char* name;
  int64_t s_q, s_kv;
  bool key_bias;
};

TEST_F(CudnnFp8AttentionTest, AccuracyVsExactCpuAttention) {
  cuda::CudnnAttention cudnn(stream());
  cuda::CudnnFp8Attention fp8(cudnn), fp8_smooth(cudnn, {.smooth_k = true});
  const std::vector<int64_t> heads = {0, 1, kHeads / 2, kHeads - 1};
  int ran = 0;
  // S = 32,768 (a multiple of 128) too: older cuDNN FP8 engines wanted 128-row multiples, so a
  // refusal of the odd lengths alone still leaves a measurement.
  for (const AccuracyCase& c : {AccuracyCase{"480p_S32760", 32760, 32760, false},
                                AccuracyCase{"aligned_S32768", 32768, 32768, false},
                                AccuracyCase{"480p_S32760_key_bias", 32760, 32760, true},
                                AccuracyCase{"cross_Sq1200_Skv32760", 1200, 32760, false},
                                AccuracyCase{"cross_Sq32760_Skv777", 32760, 777, false}}) {
    const AttentionShape shape{c.s_q, c.s_kv, kHeads, kHeadDim};
    if (!fp8_supported(fp8, shape)) continue;
    ++ran;
    const size_t mark = arena().mark();
    Operands in;
    ASSERT_STATUS_OK(make_operands(arena(), shape, c.key_bias, 4242 + static_cast<uint64_t>(c.s_q), stream(), in));
    ASSERT_OK_AND_ASSIGN(Tensor o, arena().tensor({c.s_q, kHeads * kHeadDim}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(void* workspace, arena().allocate(cuda::CudnnFp8Attention::workspace_bytes(shape)));

    // The exact reference: 64 query rows of 4 heads over every key, f32 on the CPU.
    const std::vector<int64_t> rows = spread_rows(c.s_q);
    ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
    const Tensor expected = cpu::attention(gather_host(in.q.raw_data(), kHeads, kHeadDim, rows, heads),
                                           gather_host(in.k.raw_data(), kHeads, kHeadDim, all_rows(c.s_kv), heads),
                                           gather_host(in.v.raw_data(), kHeads, kHeadDim, all_rows(c.s_kv), heads));
    auto measure = [&](const std::function<Status()>& run) -> testing::Comparison {
      const Status poisoned = poison(o, stream());  // NaN: rows cuDNN leaves unwritten show up
      EXPECT_TRUE(poisoned.is_ok()) << poisoned.to_string();
      const Status st = run();
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
      return testing::compare(gather_host(o.raw_data(), kHeads, kHeadDim, rows, heads), expected);
    };
    const testing::Comparison plain = measure([&] {
      return fp8.run(in.q.raw_data(), in.k.raw_data(), in.v.raw_data(), o.raw_data(), shape, workspace, stream());
    });
    const cuda::CudnnFp8Workspace layout = cuda::cudnn_fp8_workspace_layout(shape);
    float scalars[cuda::CudnnFp8Workspace::kScalarCount];
    ASSERT_EQ(cudaMemcpy(scalars, static_cast<char*>(workspace) + layout.scalars, sizeof scalars, cudaMemcpyDeviceToHost),
              cudaSuccess);
    const testing::Comparison smooth = measure([&] {
      return fp8_smooth.run(in.q.raw_data(), in.k.raw_data(), in.v.raw_data(), o.raw_data(), shape, workspace,
                            stream());
    });
    const testing::Comparison bf16 = measure(
        [&] { return cudnn.run(in.q.raw_data(), in.k.raw_data(), in.v.raw_data(), o.raw_data(), shape, stream()); });
    testing::Comparison flash;  // -1: no flash kernel on this GPU
    flash.rel_l2 = flash.cosine = -1;
    if (flash_runs(shape))
      flash = measure([&] {
        return cuda::flash_attention(in.q.raw_data(), in.k.raw_data(), in.v.raw_data(), o.raw_data(), shape, stream());
      });
    ASSERT_OK_AND_ASSIGN(const DType out, fp8.output_dtype(shape));
    using S = cuda::CudnnFp8Workspace;
    std::printf("CUDNN_FP8_ATTN %s rel_l2 %.3e cos %.6f smooth_k_rel_l2 %.3e smooth_k_cos %.6f cudnn_bf16_rel_l2 %.3e "
                "cudnn_bf16_cos %.6f bf16_flash_rel_l2 %.3e bf16_flash_cos %.6f o_dtype %s amax_q %.3f amax_k %.3f "
                "amax_v %.3f amax_s %.4f amax_o %.3f\n",
                c.name, plain.rel_l2, plain.cosine, smooth.rel_l2, smooth.cosine, bf16.rel_l2, bf16.cosine, flash.rel_l2,
                flash.cosine, dtype_name(out), scalars[S::kAmaxQ], scalars[S::kAmaxK], scalars[S::kAmaxV],
                scalars[S::kAmaxS], scalars[S::kAmaxO]);
    std::fflush(stdout);
    // FP8 operands, P and O each round to 3 mantissa bits: a few percent. A wrong scale, layout
    // or unwritten row is far beyond these bounds. With a key channel bias and no smoothing one
    // per-tensor K scale spends its range on the bias (measured on the H200: 0.197, cos 0.980):
    // that is why smoothing exists, so there the plain run only has to be worse than the smoothed.
    for (const testing::Comparison* f : {&plain, &smooth}) {
      EXPECT_TRUE(f->same_nonfinite) << c.name << ": " << f->summary();
      if (f == &plain && c.key_bias) {
        EXPECT_GT(plain.rel_l2, smooth.rel_l2) << c.name << ": smoothing should help with a key bias";
        continue;
      }
      EXPECT_LE(f->rel_l2, 0.15) << c.name << ": " << f->summary();
      EXPECT_GE(f->cosine, 0.99) << c.name << ": " << f->summary();
    }
    EXPECT_LE(bf16.rel_l2, 1e-2) << c.name << ": " << bf16.summary();
    arena().reset(mark);
  }
  if (ran == 0) GTEST_SKIP() << "cuDNN built no FP8 attention plan here (the CUDNN_FP8_ATTN unsupported lines say why)";
  std::printf("CUDNN_FP8_ATTN plan %s\n", cudnn.describe(fp8_of(AttentionShape{32760, 32760, kHeads, kHeadDim})).c_str());
}

// Median of 5 timed calls (one untimed before), each between CUDA events.
Expected<double> median_ms(const std::function<Status()>& run, cudaStream_t stream) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  Status status = run();
  for (int i = 0; i < 5 && status.is_ok(); ++i) {
    cudaEventRecord(start, stream);
    status = run();
    cudaEventRecord(stop, stream);
    float t = 0;
    if (status.is_ok() && (cudaEventSynchronize(stop) != cudaSuccess || cudaEventElapsedTime(&t, start, stop) != cudaSuccess))
      status = Status(ErrorCode::kIo, "timing events failed");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.is_ok()) return status;
  std::sort(ms.begin(), ms.end());
  return static_cast<double>(ms[2]);
}

TEST_F(CudnnFp8AttentionTest, TimingAtH3Lengths) {
  cuda::CudnnAttention cudnn(stream());
  cuda::CudnnFp8Attention fp8(cudnn), fp8_smooth(cudnn, {.smooth_k = true});
  int ran = 0;
  for (const int64_t S : {int64_t{32760}, int64_t{32768}, int64_t{37966}, int64_t{106428}}) {
    const AttentionShape shape{S, S, kHeads, kHeadDim};
    if (!fp8_supported(fp8, shape)) continue;
    ++ran;
    ASSERT_STATUS_OK(cudnn.prepare(shape));
    const size_t mark = arena().mark();
    Operands in;
    ASSERT_STATUS_OK(make_operands(arena(), shape, false, 77, stream(), in));
    ASSERT_OK_AND_ASSIGN(Tensor o_bf16, arena().tensor({S, kHeads * kHeadDim}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor o_fp8, arena().tensor({S, kHeads * kHeadDim}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(void* workspace, arena().allocate(cuda::CudnnFp8Attention::workspace_bytes(shape)));
    const void *q = in.q.raw_data(), *k = in.k.raw_data(), *v = in.v.raw_data();
    double flash_ms = -1;
    if (flash_runs(shape)) {
      ASSERT_OK_AND_ASSIGN(flash_ms, median_ms([&] { return cuda::flash_attention(q, k, v, o_bf16.raw_data(), shape, stream()); },
                                               stream()));
    }
    ASSERT_OK_AND_ASSIGN(const double bf16_ms,
                         median_ms([&] { return cudnn.run(q, k, v, o_bf16.raw_data(), shape, stream()); }, stream()));
    ASSERT_OK_AND_ASSIGN(const double smooth_ms,
                         median_ms([&] { return fp8_smooth.quantize(q, k, v, shape, workspace, stream()); }, stream()));
    ASSERT_OK_AND_ASSIGN(const double quantize_ms,
                         median_ms([&] { return fp8.quantize(q, k, v, shape, workspace, stream()); }, stream()));
    ASSERT_OK_AND_ASSIGN(const double fp8_ms,
                         median_ms([&] { return fp8.attend(o_fp8.raw_data(), shape, workspace, stream()); }, stream()));
    // The FP8 output against cuDNN bf16's on the first 512 rows (all heads): GPU vs GPU at full length.
    ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
    std::vector<int64_t> first(512);
    for (int64_t i = 0; i < 512; ++i) first[i] = i;
    std::vector<int64_t> every_head(kHeads);
    for (int64_t h = 0; h < kHeads; ++h) every_head[h] = h;
    const testing::Comparison vs_bf16 = testing::compare(gather_host(o_fp8.raw_data(), kHeads, kHeadDim, first, every_head),
                                                         gather_host(o_bf16.raw_data(), kHeads, kHeadDim, first, every_head));
    const double flop = 4.0 * static_cast<double>(S) * static_cast<double>(S) * static_cast<double>(kHeads * kHeadDim);
    std::printf("CUDNN_FP8_ATTN_TIME S=%ld bf16_flash_ms %.3f cudnn_bf16_ms %.3f cudnn_fp8_ms %.3f quantize_ms %.3f "
                "quantize_smooth_k_ms %.3f fp8_total_ms %.3f cudnn_fp8_tflops %.0f cudnn_bf16_tflops %.0f "
                "fp8_vs_cudnn_bf16_rel_l2 %.3e\n",
                static_cast<long>(S), flash_ms, bf16_ms, fp8_ms, quantize_ms, smooth_ms, fp8_ms + quantize_ms,
                flop / (fp8_ms * 1e-3) / 1e12, flop / (bf16_ms * 1e-3) / 1e12, vs_bf16.rel_l2);
    std::fflush(stdout);
    EXPECT_TRUE(vs_bf16.same_nonfinite) << vs_bf16.summary();
    EXPECT_LE(vs_bf16.rel_l2, 0.15) << vs_bf16.summary();
    arena().reset(mark);
  }
  if (ran == 0) GTEST_SKIP() << "cuDNN built no FP8 attention plan here (the CUDNN_FP8_ATTN unsupported lines say why)";
}

TEST_F(CudnnFp8AttentionTest, RefusesBadOperandsBeforeRunning) {
  cuda::CudnnAttention cudnn(stream());
  cuda::CudnnFp8Attention fp8(cudnn);
  AttentionShape f16{128, 128, 2, 128};
  f16.dtype = DType::kF16;
  EXPECT_EQ(fp8.prepare(f16).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fp8.prepare(AttentionShape{128, 128, 2, 72}).code(), ErrorCode::kInvalidArgument);  // D % 16
  // bf16 run() refuses an FP8 shape, run_fp8 a bf16 one, before touching cuDNN's graphs.
  EXPECT_EQ(cudnn.run(nullptr, nullptr, nullptr, nullptr, fp8_of(AttentionShape{128, 128, 2, 128}), stream()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cudnn.run_fp8(nullptr, nullptr, nullptr, nullptr, cuda::CudnnFp8Scales{}, AttentionShape{128, 128, 2, 128},
                          stream())
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cudnn.cached_graph_count(), 0u);
}

}  // namespace
}  // namespace orochi
